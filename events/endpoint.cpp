#include "events/endpoint.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>

namespace radixkv::events {

namespace {

constexpr std::size_t kMaxIpcPath = 107;  // sizeof(sockaddr_un::sun_path) - 1 on Linux

[[noreturn]] void bad(std::string_view endpoint, std::string_view why) {
  throw std::invalid_argument(fmt::format("endpoint '{}': {}", endpoint, why));
}

bool is_ip_literal(int family, std::string_view host) {
  unsigned char address[16];
  return ::inet_pton(family, std::string(host).c_str(), address) == 1;
}

// RFC 1123 host names, and '_' (container and service names carry it; the resolver takes it).
bool is_host_name(std::string_view host) {
  if (host.ends_with('.')) host.remove_suffix(1);  // a fully qualified name
  if (host.empty() || host.size() > 253) return false;
  while (!host.empty()) {
    const std::string_view label = host.substr(0, host.find('.'));
    const bool chars_ok = std::all_of(label.begin(), label.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '-' || c == '_';
    });
    if (label.empty() || label.size() > 63 || !chars_ok || label.front() == '-' ||
        label.back() == '-') {
      return false;
    }
    host.remove_prefix(std::min(host.size(), label.size() + 1));
  }
  return true;
}

void check_host(std::string_view endpoint, std::string_view host, EndpointUse use) {
  if (host.empty()) bad(endpoint, "no host before the port");
  if (host == "*") {
    if (use == EndpointUse::kConnect) bad(endpoint, "'*' (every interface) is for binding only");
    return;
  }
  if (host.front() == '[') {
    if (host.back() != ']' || !is_ip_literal(AF_INET6, host.substr(1, host.size() - 2))) {
      bad(endpoint, fmt::format("'{}' is not an IPv6 address in brackets", host));
    }
    return;
  }
  if (host.find(':') != std::string_view::npos) {
    if (!is_ip_literal(AF_INET6, host)) {
      bad(endpoint, fmt::format("'{}' is not an IPv6 address", host));
    }
    return;
  }
  // Only digits and dots: a host name's last label is never all digits, so an IPv4 address.
  if (host.find_first_not_of("0123456789.") == std::string_view::npos) {
    if (!is_ip_literal(AF_INET, host)) {
      bad(endpoint,
          fmt::format("'{}' is not an IPv4 address (four numbers from 0 to 255, dot-separated)",
                      host));
    }
    return;
  }
  if (!is_host_name(host)) {
    bad(endpoint, fmt::format("'{}' is not a host name (letters, digits, '-', '_' and dots; "
                              "labels of 1 to 63 characters)",
                              host));
  }
}

void check_port(std::string_view endpoint, std::string_view port, EndpointUse use) {
  if (port == "*") {
    if (use == EndpointUse::kConnect) bad(endpoint, "port '*' (any free port) is for binding only");
    return;
  }
  unsigned value = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || error != std::errc() || end != port.data() + port.size() || value > 65535) {
    bad(endpoint, fmt::format("port '{}' is not a number from 1 to 65535", port));
  }
  if (value == 0 && use == EndpointUse::kConnect) {
    bad(endpoint, "port 0 (any free port) is for binding only");
  }
}

}  // namespace

void check_endpoint(std::string_view endpoint, EndpointUse use) {
  const std::size_t scheme_end = endpoint.find("://");
  if (scheme_end == std::string_view::npos) {
    bad(endpoint, "expected TRANSPORT://ADDRESS (tcp://HOST:PORT, ipc://PATH or inproc://NAME)");
  }
  const std::string_view transport = endpoint.substr(0, scheme_end);
  const std::string_view address = endpoint.substr(scheme_end + 3);
  if (transport == "ipc") {
    if (address.empty() || address.size() > kMaxIpcPath) {
      bad(endpoint, fmt::format("an ipc path needs 1 to {} bytes", kMaxIpcPath));
    }
    return;
  }
  if (transport == "inproc") {
    if (address.empty()) bad(endpoint, "an inproc endpoint needs a name");
    return;
  }
  if (transport != "tcp") {
    bad(endpoint, fmt::format("unknown transport '{}' (known: tcp, ipc, inproc)", transport));
  }
  if (address.find(';') != std::string_view::npos) {
    bad(endpoint, "a source address (SOURCE;HOST:PORT) is not supported");
  }
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) bad(endpoint, "expected tcp://HOST:PORT");
  check_host(endpoint, address.substr(0, colon), use);
  check_port(endpoint, address.substr(colon + 1), use);
}

void check_endpoints(std::initializer_list<std::string_view> endpoints, EndpointUse use,
                     std::string_view context) {
  for (std::string_view endpoint : endpoints) {
    try {
      check_endpoint(endpoint, use);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}: {}", context, e.what()));
    }
  }
}

}  // namespace radixkv::events
