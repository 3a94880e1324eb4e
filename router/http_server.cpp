#include "router/http_server.h"

#include <utility>  // Boost 1.74's Asio uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <stdexcept>
#include <thread>

namespace radixkv::router {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string_view view(boost::beast::string_view s) { return {s.data(), s.size()}; }

std::string error_body(std::string_view message) {
  // The messages here are ours (ASCII, no quotes or backslashes): no JSON library needed.
  return "{\"error\": \"" + std::string(message) + "\"}";
}

}  // namespace

struct HttpServer::Impl {
  Impl(HttpLimits l, HttpHandler h) : limits(l), handler(std::move(h)), acceptor(loop) {}
  ~Impl() {
    // Close what is left first (the sockets of sessions a stopped loop still holds).
    beast::error_code ignored;
    acceptor.close(ignored);
  }

  struct Session;
  void accept();

  // Declared before the loop: the sessions its pending operations hold count themselves out
  // when the loop is destroyed.
  HttpLimits limits;
  HttpHandler handler;
  size_t open_connections = 0;  // touched by the loop's thread only
  std::atomic<uint64_t> requests{0}, timeouts{0}, malformed{0}, refused{0}, handler_errors{0};
  asio::io_context loop{1};
  tcp::acceptor acceptor;
  std::thread thread;
  bool started = false, stopped = false;
};

// One connection: read a request, answer, again while the client keeps it alive.
struct HttpServer::Impl::Session : std::enable_shared_from_this<Session> {
  Session(Impl& s, tcp::socket socket) : server(s), stream(std::move(socket)) {
    ++server.open_connections;
  }
  ~Session() { --server.open_connections; }

  void read() {
    parser.emplace();
    parser->header_limit(static_cast<uint32_t>(server.limits.max_header_bytes));
    parser->body_limit(server.limits.max_body_bytes);
    stream.expires_after(server.limits.request_timeout);
    http::async_read(
        stream, buffer, *parser,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      return close();
    }
    if (ec == beast::error::timeout) {
      ++server.timeouts;
      return;  // the stream closed the socket
    }
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      ++server.malformed;
      const bool too_large = ec == http::error::body_limit;
      const bool headers = ec == http::error::header_limit;
      return answer(too_large ? 413u
                    : headers ? 431u
                              : 400u,
                    error_body(too_large ? "body: larger than the server takes"
                               : headers ? "headers: larger than the server takes"
                                         : "not an HTTP request"),
                    false);
    }
    const http::request<http::string_body>& req = parser->get();
    const std::string_view target = view(req.target());
    const size_t question = target.find('?');
    HttpResponse response;
    try {
      response = server.handler(
          {view(req.method_string()), target.substr(0, question),
           question == std::string_view::npos ? std::string_view() : target.substr(question + 1),
           req.body()});
    } catch (const std::exception& e) {
      ++server.handler_errors;
      response = {500, "application/json", error_body("internal error")};
    }
    ++server.requests;
    answer(response.status, std::move(response.body), req.keep_alive(), response.content_type);
  }

  void answer(unsigned status, std::string body, bool keep_alive,
              const std::string& content_type = "application/json") {
    res = {};
    res.result(status);
    res.version(11);
    res.set(http::field::content_type, content_type);
    res.keep_alive(keep_alive);
    res.body() = std::move(body);
    res.prepare_payload();
    stream.expires_after(server.limits.request_timeout);  // a client that does not read is slow
    http::async_write(stream, res, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec == beast::error::timeout) ++self->server.timeouts;
      if (ec) return;
      if (self->res.keep_alive()) return self->read();
      self->close();
    });
  }

  void close() {
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream.close();
  }

  Impl& server;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  std::optional<http::request_parser<http::string_body>> parser;
  http::response<http::string_body> res;
};

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      if (open_connections >= limits.max_connections) {
        ++refused;
        beast::error_code ignored;
        socket.close(ignored);
      } else {
        std::make_shared<Session>(*this, std::move(socket))->read();
      }
    }
    accept();
  });
}

HttpServer::HttpServer(const std::string& host, int port, HttpLimits limits, HttpHandler handler)
    : impl_(std::make_unique<Impl>(limits, std::move(handler))) {
  const std::string where = host + ":" + std::to_string(port);
  if (port < 0 || port > 65535) {
    throw std::invalid_argument("--listen: port " + std::to_string(port) + " is not in 0..65535");
  }
  try {
    const tcp::endpoint endpoint(asio::ip::make_address(host), static_cast<uint16_t>(port));
    tcp::acceptor& acceptor = impl_->acceptor;
    acceptor.open(endpoint.protocol());
    // SO_REUSEADDR, never SO_REUSEPORT: a second router must not share a port in use.
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(endpoint);
    acceptor.listen(asio::socket_base::max_listen_connections);
  } catch (const std::exception& e) {
    throw std::invalid_argument("--listen: cannot listen on " + where +
                                " (in use, or not an address of this machine: " + e.what() + ")");
  }
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::start() {
  Impl& s = *impl_;
  if (s.started) return;
  s.started = true;
  s.accept();
  s.thread = std::thread([&s] { s.loop.run(); });
}

void HttpServer::stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  // Pending operations (and the sessions they hold) are destroyed with the loop, closing sockets.
  if (!s.thread.joinable()) {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    return;
  }
  asio::post(s.loop, [&s] {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    s.loop.stop();
  });
  s.thread.join();
}

HttpStats HttpServer::stats() const {
  const Impl& s = *impl_;
  return {s.requests.load(), s.timeouts.load(), s.malformed.load(), s.refused.load(),
          s.handler_errors.load()};
}

std::optional<std::string> query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t equals = pair.find('=');
    if (pair.substr(0, equals) != name) continue;
    const std::string_view raw =
        equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1);
    std::string value;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '+') {
        value += ' ';
      } else if (raw[i] != '%') {
        value += raw[i];
      } else {
        unsigned code = 0;
        for (size_t k = 1; k <= 2; ++k) {
          const char c = i + k < raw.size() ? raw[i + k] : 'x';
          const int digit = c >= '0' && c <= '9'   ? c - '0'
                            : c >= 'a' && c <= 'f' ? c - 'a' + 10
                            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                   : -1;
          if (digit < 0) return std::nullopt;
          code = code * 16 + static_cast<unsigned>(digit);
        }
        value += static_cast<char>(code);
        i += 2;
      }
    }
    return value;
  }
  return std::nullopt;
}

}  // namespace radixkv::router
