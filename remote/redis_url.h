// RedisUrl: where the remote tier's Redis is and how to log in, parsed from
//   redis://[[user]:password@]host:port[/db]           one Redis server (db: SELECT, default 0)
//   redis+cluster://[[user]:password@]host:port[,host:port...]   seed nodes of a Redis Cluster
// (the scheme of redis-cli -u, with the cluster variant listing seeds). A URL without a password
// takes it from the environment variable REDISCLI_AUTH, as redis-cli does. The password is never
// part of what describe() prints, nor of any error message this library writes.
// Hiredis 0.14 (Debian 12) has no TLS: rediss:// is refused with that reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radixkv::remote {

struct RedisEndpoint {
  std::string host;
  uint16_t port = 6379;
  friend bool operator==(const RedisEndpoint&, const RedisEndpoint&) = default;
  std::string to_string() const;  // host:port ([v6]:port for an IPv6 literal)
};

struct RedisUrl {
  bool cluster = false;
  std::vector<RedisEndpoint> endpoints;  // one unless cluster
  std::string user;                      // empty: the default user (AUTH password)
  std::optional<std::string> password;   // from the URL, else REDISCLI_AUTH, else none
  uint32_t db = 0;                       // never set for a cluster (it has only db 0)

  // Throws std::invalid_argument naming what is wrong; the message masks the password.
  // `environment_password` is REDISCLI_AUTH's value (read by the caller; nullopt when unset).
  static RedisUrl parse(std::string_view url, std::optional<std::string> environment_password);
  // parse() with REDISCLI_AUTH read from this process's environment.
  static RedisUrl parse(std::string_view url);
  // REDISCLI_AUTH's value in this process's environment; nullopt when unset or empty.
  static std::optional<std::string> environment_password();
  // The URL with the credentials masked: redis://alice:***@host:6379/2.
  std::string describe() const;
};

// `url` with any userinfo password replaced by ***: for messages about a URL that did not parse.
std::string mask_url(std::string_view url);

}  // namespace radixkv::remote
