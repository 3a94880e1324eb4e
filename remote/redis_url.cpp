#include "remote/redis_url.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace radixkv::remote {

namespace {

constexpr std::string_view kSingle = "redis://";
constexpr std::string_view kCluster = "redis+cluster://";

[[noreturn]] void bad(std::string_view url, std::string_view why) {
  throw std::invalid_argument(
      fmt::format("remote URL '{}': {} (expected "
                  "redis://[user:password@]host:port[/db] or "
                  "redis+cluster://[user:password@]host:port[,host:port...])",
                  mask_url(url), why));
}

// Userinfo may be percent-encoded (RFC 3986), so that a password can hold ':', '@' or '/'.
std::string percent_decode(std::string_view text, std::string_view url) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= text.size()) bad(url, "a '%' escape is cut short");
    const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (ec != std::errc() || end != text.data() + i + 3)
      bad(url, "a '%' escape is not two hex digits");
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

RedisEndpoint parse_endpoint(std::string_view text, std::string_view url) {
  RedisEndpoint endpoint;
  std::string_view port;
  if (text.starts_with('[')) {  // [IPv6]:port
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) bad(url, "an IPv6 host has no closing ']'");
    endpoint.host = std::string(text.substr(1, close - 1));
    text.remove_prefix(close + 1);
    if (!text.empty() && !text.starts_with(':')) bad(url, "junk after an IPv6 host");
    if (!text.empty()) port = text.substr(1);
  } else {
    const std::size_t colon = text.rfind(':');
    endpoint.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) port = text.substr(colon + 1);
  }
  if (endpoint.host.empty()) bad(url, "no host");
  if (!port.empty() || text.ends_with(':')) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      bad(url, fmt::format("port '{}' is not a number from 1 to 65535", port));
    }
    endpoint.port = static_cast<uint16_t>(value);
  }
  return endpoint;
}

}  // namespace

std::string RedisEndpoint::to_string() const {
  return host.find(':') == std::string::npos ? fmt::format("{}:{}", host, port)
                                             : fmt::format("[{}]:{}", host, port);
}

std::string mask_url(std::string_view url) {
  const std::size_t scheme = url.find("://");
  const std::size_t at = url.rfind('@');
  if (scheme == std::string_view::npos || at == std::string_view::npos || at < scheme) {
    return std::string(url);
  }
  const std::string_view userinfo = url.substr(scheme + 3, at - scheme - 3);
  const std::size_t colon = userinfo.find(':');
  // Without a ':' the whole userinfo is a password (redis://secret@host).
  const std::string_view user =
      colon == std::string_view::npos ? std::string_view() : userinfo.substr(0, colon + 1);
  return fmt::format("{}{}***{}", url.substr(0, scheme + 3), user, url.substr(at));
}

RedisUrl RedisUrl::parse(std::string_view url, std::optional<std::string> environment_password) {
  RedisUrl parsed;
  std::string_view rest;
  if (url.starts_with(kCluster)) {
    parsed.cluster = true;
    rest = url.substr(kCluster.size());
  } else if (url.starts_with(kSingle)) {
    rest = url.substr(kSingle.size());
  } else if (url.starts_with("rediss://")) {
    bad(url,
        "TLS (rediss://) is not supported: Debian 12's hiredis 0.14 has no TLS; reach the "
        "server through a TLS tunnel (stunnel, spiped) on a loopback port instead");
  } else {
    bad(url, "unknown scheme");
  }
  // The last '@' ends the userinfo: a password may not hold a raw '/', but may hold '@'.
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest.remove_prefix(at + 1);
    const std::size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos) {
      parsed.password = percent_decode(userinfo, url);
    } else {
      parsed.user = percent_decode(userinfo.substr(0, colon), url);
      parsed.password = percent_decode(userinfo.substr(colon + 1), url);
    }
    if (parsed.password->empty()) parsed.password.reset();
  }
  if (!parsed.password) parsed.password = std::move(environment_password);

  std::string_view hosts = rest;
  if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    hosts = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) {
      if (parsed.cluster) bad(url, "a Redis Cluster has only database 0: drop the '/db'");
      const auto [end, ec] = std::from_chars(db.data(), db.data() + db.size(), parsed.db);
      if (ec != std::errc() || end != db.data() + db.size()) {
        bad(url, fmt::format("database '{}' is not a number", db));
      }
    }
  }
  while (!hosts.empty()) {
    const std::size_t comma = hosts.find(',');
    parsed.endpoints.push_back(parse_endpoint(hosts.substr(0, comma), url));
    hosts = comma == std::string_view::npos ? std::string_view() : hosts.substr(comma + 1);
  }
  if (parsed.endpoints.empty()) bad(url, "no host");
  if (!parsed.cluster && parsed.endpoints.size() > 1) {
    bad(url, "several hosts need redis+cluster://");
  }
  return parsed;
}

RedisUrl RedisUrl::parse(std::string_view url) { return parse(url, environment_password()); }

std::optional<std::string> RedisUrl::environment_password() {
  const char* value = std::getenv("REDISCLI_AUTH");
  if (value == nullptr || *value == '\0') return std::nullopt;
  return value;
}

std::string RedisUrl::describe() const {
  std::vector<std::string> hosts;
  for (const RedisEndpoint& e : endpoints) hosts.push_back(e.to_string());
  std::string auth;
  if (password) auth = user.empty() ? "***@" : fmt::format("{}:***@", user);
  return fmt::format("{}{}{}{}", cluster ? kCluster : kSingle, auth, fmt::join(hosts, ","),
                     db != 0 ? fmt::format("/{}", db) : "");
}

}  // namespace radixkv::remote
