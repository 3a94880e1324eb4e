#include "router/router_service.h"

#include <httplib.h>

#include <array>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "router/block_index.h"
#include "router/route_api.h"

namespace radixkv::router {

namespace {

constexpr std::array<std::string_view, 3> kEventTypes = {"BlockStored", "BlockRemoved",
                                                         "AllBlocksCleared"};
constexpr std::array<RouteOutcome, 3> kOutcomes = {
    RouteOutcome::kPrefixHit, RouteOutcome::kNoOverlap, RouteOutcome::kLoadOverPrefix};

// Prometheus label values escape backslash, double quote and newline.
std::string label(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

void reply_json(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

}  // namespace

struct RouterService::Impl {
  explicit Impl(RouterOptions opts) : options(std::move(opts)), index(options.max_index_pages) {}

  void apply(size_t worker, const events::EventBatch& batch);
  void lose(size_t worker);
  void handle_route(const httplib::Request& req, httplib::Response& res);
  void handle_index(const httplib::Request& req, httplib::Response& res);
  void handle_healthz(httplib::Response& res);

  RouterOptions options;
  mutable std::mutex mutex;  // guards everything below but the feed and the server
  BlockIndex index;
  std::vector<std::array<uint64_t, kEventTypes.size()>> events_applied;  // by worker, type
  std::array<uint64_t, kOutcomes.size()> decisions{};
  uint64_t bad_requests = 0;

  std::unique_ptr<EventFeed> feed;
  httplib::Server server;
  int port = 0;
  std::thread http_thread;
  bool started = false, stopped = false;
};

RouterService::RouterService(RouterOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl& s = *impl_;
  if (s.options.workers.empty()) throw std::invalid_argument("--worker: give at least one worker");
  for (const WorkerEndpoints& w : s.options.workers) {
    if (s.index.find_worker(w.name)) {
      throw std::invalid_argument("--worker: the name " + w.name + " is given twice");
    }
    s.index.add_worker(w.name);
  }
  s.events_applied.resize(s.options.workers.size());
  s.feed = std::make_unique<EventFeed>(
      s.options.workers,
      FeedOptions{s.options.topic, s.options.worker_timeout, s.options.worker_timeout / 4},
      FeedSink{[&s](size_t w, const events::EventBatch& b) { s.apply(w, b); },
               [&s](size_t w, std::string_view) { s.lose(w); }});

  s.server.set_payload_max_length(64u << 20);  // a 64 MiB body is a prompt of millions of tokens
  // httplib's default adds SO_REUSEPORT, which would let a second router share a port in use.
  s.server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  s.server.Post("/route",
                [&s](const httplib::Request& q, httplib::Response& r) { s.handle_route(q, r); });
  s.server.Get("/index",
               [&s](const httplib::Request& q, httplib::Response& r) { s.handle_index(q, r); });
  s.server.Get("/healthz",
               [&s](const httplib::Request&, httplib::Response& r) { s.handle_healthz(r); });
  s.server.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
    r.set_content(metrics(), "text/plain; version=0.0.4");
  });
  if (s.options.http_port < 0 || s.options.http_port > 65535) {
    throw std::invalid_argument("--listen: port " + std::to_string(s.options.http_port) +
                                " is not in 0..65535");
  }
  if (s.options.http_port == 0) {
    s.port = s.server.bind_to_any_port(s.options.http_host);
  } else if (s.server.bind_to_port(s.options.http_host, s.options.http_port)) {
    s.port = s.options.http_port;
  }
  if (s.port <= 0) {
    throw std::invalid_argument("--listen: cannot listen on " + s.options.http_host + ":" +
                                std::to_string(s.options.http_port) +
                                " (in use, or not an address of this machine)");
  }
}

RouterService::~RouterService() { stop(); }

int RouterService::port() const { return impl_->port; }

void RouterService::start() {
  Impl& s = *impl_;
  if (s.started) return;
  s.started = true;
  s.feed->start();
  s.http_thread = std::thread([&s] { s.server.listen_after_bind(); });
}

void RouterService::stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.server.stop();
  if (s.http_thread.joinable()) s.http_thread.join();
  s.feed->stop();
}

void RouterService::Impl::apply(size_t worker, const events::EventBatch& batch) {
  std::lock_guard lock(mutex);
  for (const events::KvEvent& event : batch.events) {
    index.apply(static_cast<WorkerId>(worker), event);
    ++events_applied[worker][event.index()];
  }
}

void RouterService::Impl::lose(size_t worker) {
  std::lock_guard lock(mutex);
  index.clear_worker(static_cast<WorkerId>(worker));
}

void RouterService::Impl::handle_route(const httplib::Request& req, httplib::Response& res) {
  RouteQuery query;
  try {
    query = parse_route_request(req.body);
  } catch (const RouteRequestError& e) {
    std::lock_guard lock(mutex);
    ++bad_requests;
    return reply_json(res, 400, render_error(e.what()));
  }
  if (query.candidates.empty()) {
    for (const WorkerFeedStatus& w : feed->status()) {
      if (w.state == WorkerState::kUp) query.candidates.push_back({w.name, 0});
    }
    if (query.candidates.empty()) {
      return reply_json(res, 503, render_error("no worker is up: give candidates, or wait"));
    }
  }
  std::lock_guard lock(mutex);
  try {
    const RouteDecision decision = route(index, query.request, query.candidates, options.weights);
    for (size_t i = 0; i < kOutcomes.size(); ++i) decisions[i] += kOutcomes[i] == decision.outcome;
    reply_json(res, 200, render_route_decision(decision));
  } catch (const std::invalid_argument& e) {
    ++bad_requests;
    reply_json(res, 400, render_error(e.what()));
  }
}

void RouterService::Impl::handle_index(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_param("worker")) {
    return reply_json(res, 400, render_error("worker: give ?worker=NAME"));
  }
  const std::string name = req.get_param_value("worker");
  std::lock_guard lock(mutex);
  const std::optional<WorkerId> worker = index.find_worker(name);
  if (!worker) return reply_json(res, 404, render_error("worker: no worker named " + name));
  reply_json(res, 200, render_holdings(name, index.holdings(*worker)));
}

void RouterService::Impl::handle_healthz(httplib::Response& res) {
  nlohmann::json workers = nlohmann::json::array();
  const std::vector<WorkerFeedStatus> status = feed->status();
  std::lock_guard lock(mutex);
  for (size_t w = 0; w < status.size(); ++w) {
    workers.push_back({{"name", status[w].name},
                       {"state", to_string(status[w].state)},
                       {"next_seq", status[w].next_seq},
                       {"pages", index.pages_of(static_cast<WorkerId>(w))}});
  }
  reply_json(res, 200, nlohmann::json{{"status", "ok"}, {"workers", std::move(workers)}}.dump());
}

std::string RouterService::metrics() const {
  const Impl& s = *impl_;
  const std::vector<WorkerFeedStatus> status = s.feed->status();
  std::ostringstream out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  };
  auto per_worker = [&](const char* name, const char* type, const char* help, auto value) {
    family(name, type, help);
    for (const WorkerFeedStatus& w : status) {
      out << name << "{worker=\"" << label(w.name) << "\"} " << value(w) << '\n';
    }
  };
  per_worker("radixkv_router_batches_applied_total", "counter", "Event batches applied.",
             [](const WorkerFeedStatus& w) { return w.batches; });
  per_worker("radixkv_router_replay_requests_total", "counter",
             "Replay requests sent to the worker (gaps, catch-up and liveness probes).",
             [](const WorkerFeedStatus& w) { return w.replay_requests; });
  per_worker("radixkv_router_gaps_unfilled_total", "counter",
             "Gaps in seq that replay could not fill (the worker's entries were cleared).",
             [](const WorkerFeedStatus& w) { return w.gaps_unfilled; });
  per_worker("radixkv_router_decode_errors_total", "counter",
             "Messages that were not a valid event batch.",
             [](const WorkerFeedStatus& w) { return w.decode_errors; });
  per_worker("radixkv_router_worker_down_total", "counter",
             "Times the worker was dropped for silence past the timeout.",
             [](const WorkerFeedStatus& w) { return w.times_down; });
  per_worker("radixkv_router_worker_up", "gauge", "1 while the worker answers.",
             [](const WorkerFeedStatus& w) { return w.state == WorkerState::kUp ? 1 : 0; });

  std::lock_guard lock(s.mutex);
  family("radixkv_router_events_applied_total", "counter", "KV events applied, by type.");
  for (size_t w = 0; w < status.size(); ++w) {
    for (size_t t = 0; t < kEventTypes.size(); ++t) {
      out << "radixkv_router_events_applied_total{worker=\"" << label(status[w].name)
          << "\",type=\"" << kEventTypes[t] << "\"} " << s.events_applied[w][t] << '\n';
    }
  }
  per_worker(
      "radixkv_router_index_pages", "gauge", "Blocks the index says the worker holds.",
      [&s](const WorkerFeedStatus& w) { return s.index.pages_of(*s.index.find_worker(w.name)); });
  family("radixkv_router_index_pages_total", "gauge", "Blocks in the index (any worker).");
  out << "radixkv_router_index_pages_total " << s.index.pages() << '\n';
  family("radixkv_router_index_max_pages", "gauge", "The index's bound (--max-index-pages).");
  out << "radixkv_router_index_max_pages " << s.index.max_pages() << '\n';
  family("radixkv_router_index_evicted_pages_total", "counter",
         "Blocks the index forgot to stay within its bound.");
  out << "radixkv_router_index_evicted_pages_total " << s.index.evicted_pages() << '\n';
  family("radixkv_router_decisions_total", "counter", "Routing decisions, by outcome.");
  for (size_t i = 0; i < kOutcomes.size(); ++i) {
    out << "radixkv_router_decisions_total{outcome=\"" << to_string(kOutcomes[i]) << "\"} "
        << s.decisions[i] << '\n';
  }
  family("radixkv_router_bad_requests_total", "counter", "Requests refused as malformed.");
  out << "radixkv_router_bad_requests_total " << s.bad_requests << '\n';
  return out.str();
}

}  // namespace radixkv::router
