#include "router/router_cli.h"

#include <pthread.h>
#include <cmath>
#include <csignal>
#include <stdexcept>

#include "events/endpoint.h"

namespace radixkv::router {

namespace {

WorkerEndpoints parse_worker(const std::string& spec) {
  const size_t equals = spec.find('=');
  const size_t comma = spec.find(',', equals == std::string::npos ? 0 : equals);
  if (equals == 0 || equals == std::string::npos || comma == std::string::npos ||
      comma == equals + 1 || comma + 1 == spec.size()) {
    throw std::invalid_argument("--worker " + spec +
                                ": expected NAME=PUB_ENDPOINT,REPLAY_ENDPOINT");
  }
  WorkerEndpoints worker{spec.substr(0, equals), spec.substr(equals + 1, comma - equals - 1),
                         spec.substr(comma + 1)};
  events::check_endpoints({worker.pub, worker.replay}, events::EndpointUse::kConnect,
                          "--worker " + spec);
  return worker;
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

RouterOptions router_options(const RouterFlags& flags) {
  RouterOptions options;
  for (const std::string& spec : flags.workers) options.workers.push_back(parse_worker(spec));
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
  try {
    service = std::make_unique<RouterService>(router_options(flags));
  } catch (const std::exception& e) {
    err << "radixkv router: " << e.what() << '\n';
    return 2;
  }
  service->start();
  out << "radixkv router: listening on http://" << router_options(flags).http_host << ':'
      << service->port() << " for " << flags.workers.size() << " worker(s)" << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  service->stop();
  out << "radixkv router: stopped (" << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ")"
      << std::endl;
  return 0;
}

}  // namespace radixkv::router
