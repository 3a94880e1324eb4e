#include "router/router_service.h"

#include <array>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

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

HttpResponse json_response(unsigned status, std::string body) {
  return {status, "application/json", std::move(body)};
}

}  // namespace

struct RouterService::Impl {
  explicit Impl(RouterOptions opts)
      : options(std::move(opts)), index(options.max_index_pages, options.tiers) {}

  void apply(size_t worker, const events::EventBatch& batch);
  void lose(size_t worker);
  HttpResponse handle(const HttpRequest& req);
  HttpResponse handle_route(std::string_view body);
  HttpResponse handle_index(std::string_view query);
  HttpResponse handle_healthz();

  RouterOptions options;
  mutable std::mutex mutex;  // guards everything below but the feed and the server
  BlockIndex index;
  std::vector<std::array<uint64_t, kEventTypes.size()>> events_applied;  // by worker, type
  std::array<uint64_t, kOutcomes.size()> decisions{};
  uint64_t bad_requests = 0;

  std::unique_ptr<EventFeed> feed;
  std::unique_ptr<HttpServer> server;
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
  FeedOptions feed;
  feed.topic = s.options.topic;
  feed.timeout = s.options.worker_timeout;
  feed.probe_after = s.options.worker_timeout / 4;
  feed.max_batch_bytes = s.options.max_batch_bytes;
  s.feed = std::make_unique<EventFeed>(
      s.options.workers, feed,
      FeedSink{[&s](size_t w, const events::EventBatch& b) { s.apply(w, b); },
               [&s](size_t w, std::string_view) { s.lose(w); }});
  s.server = std::make_unique<HttpServer>(
      s.options.http_host, s.options.http_port, s.options.http, [this](const HttpRequest& req) {
        if (req.path == "/metrics" && req.method == "GET") {
          return HttpResponse{200, "text/plain; version=0.0.4", metrics()};
        }
        return impl_->handle(req);
      });
}

RouterService::~RouterService() { stop(); }

int RouterService::port() const { return impl_->server->port(); }

void RouterService::start() {
  Impl& s = *impl_;
  if (s.started) return;
  s.started = true;
  s.feed->start();
  s.server->start();
}

void RouterService::stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.server->stop();
  s.feed->stop();
}

void RouterService::Impl::apply(size_t worker, const events::EventBatch& batch) {
  const auto id = static_cast<WorkerId>(worker);
  for (const events::KvEvent& event : batch.events) {
    // A part at a time: a route waits for one part at most, never a whole batch.
    for (size_t at = 0; at != BlockIndex::kDone;) {
      std::lock_guard lock(mutex);
      at = index.apply_part(id, event, at, kPartBlocks);
    }
    std::lock_guard lock(mutex);
    ++events_applied[worker][event.index()];
  }
}

void RouterService::Impl::lose(size_t worker) {
  std::lock_guard lock(mutex);
  index.clear_worker(static_cast<WorkerId>(worker));
}

HttpResponse RouterService::Impl::handle(const HttpRequest& req) {
  const bool get = req.method == "GET";
  if (req.path == "/route") {
    if (req.method == "POST") return handle_route(req.body);
  } else if (req.path == "/index") {
    if (get) return handle_index(req.query);
  } else if (req.path == "/healthz") {
    if (get) return handle_healthz();
  } else {
    return json_response(404, render_error("no such path (known: POST /route, GET /index, "
                                           "GET /healthz, GET /metrics)"));
  }
  return json_response(405, render_error(std::string(req.path) + ": method not allowed"));
}

HttpResponse RouterService::Impl::handle_route(std::string_view body) {
  RouteQuery query;
  try {
    query = parse_route_request(body);
  } catch (const RouteRequestError& e) {
    std::lock_guard lock(mutex);
    ++bad_requests;
    return json_response(400, render_error(e.what()));
  }
  if (query.candidates.empty()) {
    for (const WorkerFeedStatus& w : feed->status()) {
      if (w.state == WorkerState::kUp) query.candidates.push_back({w.name, 0});
    }
    if (query.candidates.empty()) {
      return json_response(503, render_error("no worker is up: give candidates, or wait"));
    }
  }
  std::lock_guard lock(mutex);
  try {
    const RouteDecision decision = route(index, query.request, query.candidates, options.weights);
    for (size_t i = 0; i < kOutcomes.size(); ++i) decisions[i] += kOutcomes[i] == decision.outcome;
    return json_response(200, render_route_decision(decision));
  } catch (const std::invalid_argument& e) {
    ++bad_requests;
    return json_response(400, render_error(e.what()));
  }
}

HttpResponse RouterService::Impl::handle_index(std::string_view query) {
  const std::optional<std::string> name = query_value(query, "worker");
  if (!name) return json_response(400, render_error("worker: give ?worker=NAME"));
  std::lock_guard lock(mutex);
  const std::optional<WorkerId> worker = index.find_worker(*name);
  if (!worker) return json_response(404, render_error("worker: no worker named " + *name));
  return json_response(200, render_holdings(*name, index.holdings(*worker)));
}

HttpResponse RouterService::Impl::handle_healthz() {
  nlohmann::json workers = nlohmann::json::array();
  const std::vector<WorkerFeedStatus> status = feed->status();
  std::lock_guard lock(mutex);
  for (size_t w = 0; w < status.size(); ++w) {
    workers.push_back({{"name", status[w].name},
                       {"state", to_string(status[w].state)},
                       {"next_seq", status[w].next_seq},
                       {"pages", index.pages_of(static_cast<WorkerId>(w))}});
  }
  return json_response(200, nlohmann::json{{"status", "ok"}, {"workers", std::move(workers)}}.dump(
                                -1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string RouterService::metrics() const {
  const Impl& s = *impl_;
  const std::vector<WorkerFeedStatus> status = s.feed->status();
  const HttpStats http = s.server->stats();
  std::ostringstream out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  };
  auto one = [&](const char* name, const char* type, const char* help, auto value) {
    family(name, type, help);
    out << name << ' ' << value << '\n';
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
  per_worker("radixkv_router_batches_discarded_total", "counter",
             "PUB batches dropped: seqs the worker's replay never had, or past the held bounds.",
             [](const WorkerFeedStatus& w) { return w.discarded; });
  per_worker("radixkv_router_worker_down_total", "counter",
             "Times the worker was dropped for silence past the timeout.",
             [](const WorkerFeedStatus& w) { return w.times_down; });
  per_worker("radixkv_router_worker_up", "gauge", "1 while the worker answers.",
             [](const WorkerFeedStatus& w) { return w.state == WorkerState::kUp ? 1 : 0; });
  one("radixkv_router_http_requests_total", "counter", "HTTP requests answered.", http.requests);
  family("radixkv_router_http_rejected_total", "counter",
         "HTTP connections closed unanswered or refused, by reason.");
  out << "radixkv_router_http_rejected_total{reason=\"timeout\"} " << http.timeouts << '\n'
      << "radixkv_router_http_rejected_total{reason=\"malformed\"} " << http.malformed << '\n'
      << "radixkv_router_http_rejected_total{reason=\"connections\"} " << http.connections_refused
      << '\n';
  one("radixkv_router_internal_errors_total", "counter", "Requests answered 500.",
      http.handler_errors);

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
  one("radixkv_router_index_pages_total", "gauge", "Blocks in the index (any worker).",
      s.index.pages());
  one("radixkv_router_index_max_pages", "gauge", "The index's bound (--max-index-pages).",
      s.index.max_pages());
  one("radixkv_router_index_evicted_pages_total", "counter",
      "Blocks the index forgot to stay within its bound.", s.index.evicted_pages());
  one("radixkv_router_index_refused_blocks_total", "counter",
      "Stored blocks skipped: events larger than the bound, a worker's 33rd medium.",
      s.index.refused_blocks());
  family("radixkv_router_decisions_total", "counter", "Routing decisions, by outcome.");
  for (size_t i = 0; i < kOutcomes.size(); ++i) {
    out << "radixkv_router_decisions_total{outcome=\"" << to_string(kOutcomes[i]) << "\"} "
        << s.decisions[i] << '\n';
  }
  one("radixkv_router_bad_requests_total", "counter", "Requests refused as malformed.",
      s.bad_requests);
  return out.str();
}

}  // namespace radixkv::router
