#include "tools/cli/metrics_endpoint.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "metrics/prometheus.h"

namespace radixkv::tools {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr uint32_t kMaxRequestHead = 8 * 1024;

tcp::endpoint loopback_endpoint(const std::string& listen) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("--metrics-listen {}: {}", listen, why));
  };
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    throw bad("expected HOST:PORT");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = listen.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    throw bad("PORT must be a number in 0..65535");
  }
  asio::ip::address address = asio::ip::address_v4::loopback();
  if (host != "localhost") {
    boost::system::error_code ec;
    address = asio::ip::make_address(host, ec);
    if (ec) throw bad(fmt::format("'{}' is not an IP address (nor localhost)", host));
  }
  if (!address.is_loopback()) {
    throw bad(fmt::format(
        "{} is not a loopback address: the endpoint serves this machine only (a scraper elsewhere "
        "goes through a proxy)",
        host));
  }
  return {address, static_cast<uint16_t>(std::stoi(port))};
}

}  // namespace

struct MetricsEndpoint::Impl {
  // Declared before io: handlers the io_context destroys (sessions) still find them.
  std::mutex mutex;
  std::string exposition;  // under mutex
  int clients = 0;         // connections open; only the server's thread touches it
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
  tcp::endpoint bound;  // set before the thread starts

  void accept();
  std::string latest() {
    const std::lock_guard lock(mutex);
    return exposition;
  }
};

namespace {

// One connection: one request read (head only, bounded), one answer, then closed.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, MetricsEndpoint::Impl& endpoint)
      : stream_(std::move(socket)), endpoint_(endpoint) {
    ++endpoint_.clients;
  }
  ~Session() { --endpoint_.clients; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() {
    parser_.header_limit(kMaxRequestHead);
    parser_.body_limit(0);
    stream_.expires_after(MetricsEndpoint::kClientTimeout);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (!ec) self->answer();  // else malformed, too large or too slow: dropped
                     });
  }

 private:
  void answer() {
    const auto& request = parser_.get();
    const std::string_view target(request.target().data(), request.target().size());
    response_.version(request.version());
    response_.keep_alive(false);
    if (target != "/metrics" && !target.starts_with("/metrics?")) {
      response_.result(http::status::not_found);
      response_.set(http::field::content_type, "text/plain");
      response_.body() = "not found: this endpoint serves GET /metrics only\n";
    } else if (request.method() != http::verb::get) {
      response_.result(http::status::method_not_allowed);
      response_.set(http::field::allow, "GET");
    } else {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, std::string(metrics::kPrometheusContentType));
      response_.body() = endpoint_.latest();
    }
    response_.prepare_payload();
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code, std::size_t) {
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_{kMaxRequestHead};
  http::request_parser<http::empty_body> parser_;
  http::response<http::string_body> response_;
  MetricsEndpoint::Impl& endpoint_;
};

}  // namespace

void MetricsEndpoint::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      if (clients >= kMaxClients) {
        socket.close(ec);  // shed: the client sees its connection closed
      } else {
        std::make_shared<Session>(std::move(socket), *this)->start();
      }
    }
    accept();
  });
}

MetricsEndpoint::MetricsEndpoint(const std::string& listen) : impl_(std::make_unique<Impl>()) {
  const tcp::endpoint endpoint = loopback_endpoint(listen);
  Impl& s = *impl_;
  beast::error_code ec;
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::invalid_argument(
        fmt::format("--metrics-listen {}: cannot listen there: {}", listen, ec.message()));
  }
  s.bound = s.acceptor.local_endpoint();
  s.accept();
  s.thread = std::thread([&s] { s.io.run(); });
}

MetricsEndpoint::~MetricsEndpoint() {
  impl_->io.stop();
  impl_->thread.join();
}

int MetricsEndpoint::port() const { return impl_->bound.port(); }

std::string MetricsEndpoint::host() const { return impl_->bound.address().to_string(); }

void MetricsEndpoint::publish(std::string exposition) {
  const std::lock_guard lock(impl_->mutex);
  impl_->exposition = std::move(exposition);
}

void MetricsPublisher::operator()(const PrefixCacheRuntime& runtime, bool done) {
  const auto now = std::chrono::steady_clock::now();
  if (!done && now - last_ < kInterval) return;
  last_ = now;
  std::ostringstream text;
  runtime.write_metrics(text);
  endpoint_.publish(std::move(text).str());
}

}  // namespace radixkv::tools
