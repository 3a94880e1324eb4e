// MetricsEndpoint: `radixkv replay --metrics-listen HOST:PORT`, an HTTP server that answers
// `GET /metrics` with the latest Prometheus exposition the replay published (docs/metrics.md),
// while the replay runs and, with --metrics-linger, for a while after its report.
//
// The runtime is single-owner, so the replay's thread renders the exposition (publish()) and the
// server's thread only copies the latest text under a lock: a scrape never touches the runtime.
//
// Every byte from the network is hostile, so the server is bounded: loopback addresses only
// (127.0.0.0/8, ::1, localhost); one thread; at most kMaxClients connections at once (more are
// closed at once); a request's head at most 8 KiB and no body; kClientTimeout to send it and take
// the answer; one request per connection (Connection: close). Anything but GET /metrics is 404 or
// 405. Built on Boost.Beast (header-only: the replay loads no TLS library, unlike cpp-httplib's
// Debian build, which tools/cli/cli.h keeps out of `radixkv`).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/prefix_cache_runtime.h"

namespace radixkv::tools {

class MetricsEndpoint {
 public:
  static constexpr int kMaxClients = 16;
  static constexpr std::chrono::seconds kClientTimeout{5};

  // `listen` is HOST:PORT ([HOST]:PORT for IPv6), PORT 0 for any free port. Binds and starts
  // serving (an empty exposition until the first publish()). Throws std::invalid_argument naming
  // the address and why (malformed, not loopback, in use).
  explicit MetricsEndpoint(const std::string& listen);
  ~MetricsEndpoint();  // stops serving: connections in progress are closed
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const;
  std::string host() const;
  void publish(std::string exposition);

  struct Impl;  // the server (metrics_endpoint.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

// What the engine replay calls after each step (EngineReplayConfig::on_step): renders the
// runtime's exposition and publishes it, at most every kInterval (a scrape only wants it fresh
// to a fraction of its own period) and once more when the run is done.
class MetricsPublisher {
 public:
  static constexpr std::chrono::milliseconds kInterval{50};
  explicit MetricsPublisher(MetricsEndpoint& endpoint) : endpoint_(endpoint) {}
  void operator()(const PrefixCacheRuntime& runtime, bool done);

 private:
  MetricsEndpoint& endpoint_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace radixkv::tools
