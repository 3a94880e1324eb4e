#include "router/router_cli.h"

#include <pthread.h>

#include <charconv>
#include <cmath>
#include <csignal>
#include <stdexcept>

#include "events/endpoint.h"

namespace radixkv::router {

namespace {

constexpr int64_t kMaxRanks = 1024;

// NAME=PUB,REPLAY[,dp=N]: one worker, or N of them (one per data parallel rank).
std::vector<WorkerEndpoints> parse_worker(const std::string& spec) {
  const auto bad = [&] {
    return std::invalid_argument("--worker " + spec +
                                 ": expected NAME=PUB_ENDPOINT,REPLAY_ENDPOINT[,dp=RANKS]");
  };
  const size_t equals = spec.find('=');
  if (equals == 0 || equals == std::string::npos) throw bad();
  std::vector<std::string> parts;
  for (size_t at = equals + 1;;) {
    const size_t comma = spec.find(',', at);
    parts.push_back(spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty()) throw bad();
  events::check_endpoints({parts[0], parts[1]}, events::EndpointUse::kConnect, "--worker " + spec);
  const std::string name = spec.substr(0, equals);
  if (parts.size() == 2) return {{name, parts[0], parts[1]}};
  int64_t ranks = 0;
  const std::string& dp = parts[2];
  const auto [end, error] = dp.starts_with("dp=")
                                ? std::from_chars(dp.data() + 3, dp.data() + dp.size(), ranks)
                                : std::from_chars_result{dp.data(), std::errc::invalid_argument};
  if (error != std::errc() || end != dp.data() + dp.size() || ranks < 1 || ranks > kMaxRanks) {
    throw std::invalid_argument("--worker " + spec + ": dp= takes a number of ranks in 1.." +
                                std::to_string(kMaxRanks));
  }
  std::vector<WorkerEndpoints> workers;
  for (int64_t r = 0; r < ranks; ++r) {
    workers.push_back({name + "/dp" + std::to_string(r), offset_endpoint(parts[0], r),
                       offset_endpoint(parts[1], r), r});
  }
  return workers;
}

void parse_listen(const std::string& listen, RouterOptions& options) {
  const size_t colon = listen.rfind(':');
  const auto bad = [&] {
    return std::invalid_argument("--listen " + listen + ": expected HOST:PORT, PORT in 0..65535");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) throw bad();
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = listen.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) throw bad();
  options.http_port = std::stoi(port);
  if (options.http_port > 65535) throw bad();
  options.http_host = host;
}

}  // namespace

std::string offset_endpoint(const std::string& endpoint, int64_t rank) {
  if (rank == 0) return endpoint;
  if (endpoint.find("inproc") != std::string::npos) {
    return endpoint + "_dp" + std::to_string(rank);
  }
  const size_t colon = endpoint.rfind(':');
  int port = 0;
  const char* digits = endpoint.data() + colon + 1;
  const char* end = endpoint.data() + endpoint.size();
  if (endpoint.find("tcp") == std::string::npos || colon == std::string::npos ||
      std::from_chars(digits, end, port).ptr != end || port + rank > 65535) {
    throw std::invalid_argument(
        "endpoint " + endpoint + ": cannot offset it for data parallel rank " +
        std::to_string(rank) + " (vLLM offsets tcp ports and inproc names)");
  }
  return endpoint.substr(0, colon + 1) + std::to_string(port + rank);
}

RouterOptions router_options(const RouterFlags& flags) {
  RouterOptions options;
  for (const std::string& spec : flags.workers) {
    for (WorkerEndpoints& w : parse_worker(spec)) options.workers.push_back(std::move(w));
  }
  parse_listen(flags.listen, options);
  options.topic = flags.topic;
  if (flags.max_index_pages == 0) throw std::invalid_argument("--max-index-pages: must be >= 1");
  options.max_index_pages = flags.max_index_pages;
  if (!std::isfinite(flags.worker_timeout_seconds) || flags.worker_timeout_seconds < 0.01 ||
      flags.worker_timeout_seconds > 86400) {
    throw std::invalid_argument("--worker-timeout: expected seconds in [0.01, 86400], got " +
                                std::to_string(flags.worker_timeout_seconds));
  }
  options.worker_timeout =
      std::chrono::milliseconds(std::llround(flags.worker_timeout_seconds * 1000));
  if (!std::isfinite(flags.overlap_weight) || flags.overlap_weight < 0) {
    throw std::invalid_argument("--overlap-weight: expected a number >= 0, got " +
                                std::to_string(flags.overlap_weight));
  }
  options.weights.overlap_score_weight = flags.overlap_weight;
  for (const std::string& spec : flags.tier_weights) parse_tier_weight(spec, options.tiers);
  if (flags.max_batch_bytes < 1024) {
    throw std::invalid_argument("--max-batch-bytes: must be at least 1024");
  }
  options.max_batch_bytes = flags.max_batch_bytes;
  if (flags.max_body_bytes < 1024)
    throw std::invalid_argument("--max-body-bytes: must be at least 1024");
  options.http.max_body_bytes = flags.max_body_bytes;
  if (!std::isfinite(flags.http_timeout_seconds) || flags.http_timeout_seconds < 0.01 ||
      flags.http_timeout_seconds > 3600) {
    throw std::invalid_argument("--http-timeout: expected seconds in [0.01, 3600], got " +
                                std::to_string(flags.http_timeout_seconds));
  }
  options.http.request_timeout =
      std::chrono::milliseconds(std::llround(flags.http_timeout_seconds * 1000));
  if (flags.max_connections == 0) throw std::invalid_argument("--max-connections: must be >= 1");
  options.http.max_connections = flags.max_connections;
  if (flags.max_pending_routes == 0 || flags.max_pending_routes > (1u << 24)) {
    throw std::invalid_argument("--max-pending-routes: expected 1 .. 16777216, got " +
                                std::to_string(flags.max_pending_routes));
  }
  options.max_pending_routes = flags.max_pending_routes;
  if (!std::isfinite(flags.route_ttl_seconds) || flags.route_ttl_seconds < 0.001 ||
      flags.route_ttl_seconds > 86400) {
    throw std::invalid_argument("--route-ttl: expected seconds in [0.001, 86400], got " +
                                std::to_string(flags.route_ttl_seconds));
  }
  options.route_ttl = std::chrono::milliseconds(std::llround(flags.route_ttl_seconds * 1000));
  return options;
}

int run_router(const RouterFlags& flags, std::ostream& out, std::ostream& err) {
  // Every thread started from here on inherits the blocked signals; this one waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::unique_ptr<RouterService> service;
  RouterOptions options;
  try {
    options = router_options(flags);
    service = std::make_unique<RouterService>(options);
  } catch (const std::exception& e) {
    err << "radixkv router: " << e.what() << '\n';
    return 2;
  }
  service->start();
  out << "radixkv router: listening on http://" << options.http_host << ':' << service->port()
      << " for " << options.workers.size() << " worker(s)" << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  service->stop();
  out << "radixkv router: stopped (" << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ")"
      << std::endl;
  return 0;
}

}  // namespace radixkv::router
