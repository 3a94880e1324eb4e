// HttpServer: the router's HTTP/1.1 server, on Boost.Beast over Boost.Asio (Debian's libboost-dev,
// header-only): one thread runs one event loop for every connection, so a client that sends
// nothing, or one byte at a time, holds a socket and a few kilobytes, never a thread.
//
// Bounds, per connection (HttpLimits): a whole request — headers and body — must arrive within
// `request_timeout` of the connection's opening or of the previous answer (a keep-alive client
// waits idle within the same bound), and an answer must be taken within it too; headers beyond
// `max_header_bytes` are refused with 431, a body beyond `max_body_bytes` with 413, anything else
// that is not HTTP with 400, each then closed. Past `max_connections` open connections a new one is
// closed at once. The listening socket takes the system's largest backlog (SOMAXCONN), so a burst
// of clients waits to be accepted instead of being reset.
//
// The handler runs on the loop's thread, one request at a time: it must be quick (the router's
// are: a lock and an index lookup). An exception from it is a 500 with {"error": ...}, counted.
// stop() closes the listening socket and every connection at once (a request being handled
// finishes first, its answer is dropped), and joins the thread; idempotent.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace radixkv::router {

struct HttpLimits {
  size_t max_body_bytes = 16u << 20;  // a prompt of ~2 M tokens as JSON
  size_t max_header_bytes = 16u << 10;
  std::chrono::milliseconds request_timeout{10'000};
  size_t max_connections = 1024;
};

struct HttpRequest {
  std::string_view method;  // "GET", "POST", ...
  std::string_view path;    // the target before '?'
  std::string_view query;   // after '?', still percent-encoded
  std::string_view body;
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Counters a metrics endpoint shows; read from any thread.
struct HttpStats {
  uint64_t requests = 0;             // handled (any status)
  uint64_t timeouts = 0;             // connections closed for slowness
  uint64_t malformed = 0;            // not HTTP, headers or body too large
  uint64_t connections_refused = 0;  // past max_connections
  uint64_t handler_errors = 0;       // 500s
};

class HttpServer {
 public:
  // Binds host:port (port 0: any free port) and listens. Throws std::invalid_argument naming the
  // address when it cannot (in use, or not an address of this machine).
  HttpServer(const std::string& host, int port, HttpLimits limits, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  void start();
  void stop();
  HttpStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `query`'s value of `name` ("worker=gpu%200" -> "gpu 0"); nullopt when absent or not valid
// percent-encoding.
std::optional<std::string> query_value(std::string_view query, std::string_view name);

}  // namespace radixkv::router
