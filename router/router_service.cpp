#include "router/router_service.h"

#include <array>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>

#include "router/block_index.h"
#include "router/route_api.h"
#include "router/route_ledger.h"

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

std::vector<std::string> worker_names(const RouterOptions& options) {
  std::vector<std::string> names;
  for (const WorkerEndpoints& w : options.workers) names.push_back(w.name);
  return names;
}

// The hit the chosen worker would deliver if the index is right (router/overlap_gap.h).
uint64_t predicted_hit(const RouteDecision& decision, const RouteRequest& request) {
  const double overlap_tokens =
      decision.candidates.at(decision.chosen).overlap_blocks * request.page_size;
  return predicted_hit_tokens(static_cast<uint64_t>(std::llround(overlap_tokens)),
                              request.by_hashes ? 0 : request.tokens.size(), request.page_size);
}

// Predicted against delivered overlap (POST /observe): per worker, then worker="" for routes to
// candidates that are no configured worker.
void write_overlap_metrics(std::ostream& out, const RouteLedger& ledger) {
  const std::vector<OverlapGap>& gaps = ledger.gaps();
  const std::vector<std::string>& names = ledger.workers();
  const auto name_of = [&](size_t w) { return w < names.size() ? label(names[w]) : std::string(); };
  const auto per_worker = [&](const char* name, const char* help, auto value) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " counter\n";
    for (size_t w = 0; w < gaps.size(); ++w) {
      out << name << "{worker=\"" << name_of(w) << "\"} " << value(gaps[w]) << '\n';
    }
  };
  per_worker("radixkv_router_observations_total",
             "Routes whose delivered hit the engine posted (POST /observe).",
             [](const OverlapGap& g) { return g.observations; });
  per_worker("radixkv_router_predicted_overlap_tokens_total",
             "Prompt tokens the index said the chosen worker held, cut as an engine reuses them, "
             "over observed routes.",
             [](const OverlapGap& g) { return g.predicted_tokens; });
  per_worker("radixkv_router_delivered_overlap_tokens_total",
             "Prompt tokens the worker reused, over observed routes.",
             [](const OverlapGap& g) { return g.delivered_tokens; });
  per_worker("radixkv_router_overlap_overpredicted_tokens_total",
             "Sum of predicted minus delivered where the index promised more (blocks gone).",
             [](const OverlapGap& g) { return g.overpredicted_tokens; });
  per_worker("radixkv_router_overlap_underpredicted_tokens_total",
             "Sum of delivered minus predicted where the worker held more (events not yet seen).",
             [](const OverlapGap& g) { return g.underpredicted_tokens; });
  per_worker("radixkv_router_overlap_mispredicted_total",
             "Observed routes whose predicted and delivered overlap differ.",
             [](const OverlapGap& g) { return g.mismatched; });
  OverlapGap all;
  for (const OverlapGap& g : gaps) all += g;
  const char* gap = "radixkv_router_overlap_gap_tokens";
  out << "# HELP " << gap
      << " |predicted - delivered| overlap per observed route, in tokens.\n# TYPE " << gap
      << " histogram\n";
  for (size_t i = 0; i < OverlapGap::kGapBuckets.size(); ++i) {
    out << gap << "_bucket{le=\"" << OverlapGap::kGapBuckets[i] << "\"} " << all.gap_at_most[i]
        << '\n';
  }
  out << gap << "_bucket{le=\"+Inf\"} " << all.observations << '\n'
      << gap << "_sum " << all.gap_tokens() << '\n'
      << gap << "_count " << all.observations << '\n';
  out << "# HELP radixkv_router_observations_refused_total POST /observe bodies refused, by "
         "reason.\n# TYPE radixkv_router_observations_refused_total counter\n";
  for (ObserveRefusal reason : kObserveRefusals) {
    out << "radixkv_router_observations_refused_total{reason=\"" << to_string(reason) << "\"} "
        << ledger.refused(reason) << '\n';
  }
}

}  // namespace

struct RouterService::Impl {
  explicit Impl(RouterOptions opts)
      : options(std::move(opts)),
        index(options.max_index_pages, options.tiers),
        ledger(worker_names(options), options.max_pending_routes, options.route_ttl,
               std::random_device{}() * (uint64_t{1} << 32) ^ std::random_device{}()) {}

  void apply(size_t worker, const events::EventBatch& batch);
  void lose(size_t worker);
  HttpResponse handle(const HttpRequest& req);
  HttpResponse handle_route(std::string_view body);
  HttpResponse handle_observe(std::string_view body);
  HttpResponse handle_index(std::string_view query);
  HttpResponse handle_healthz();

  RouterOptions options;
  mutable std::mutex mutex;  // guards everything below but the feed and the server
  BlockIndex index;
  RouteLedger ledger;
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
  } else if (req.path == "/observe") {
    if (req.method == "POST") return handle_observe(req.body);
  } else if (req.path == "/index") {
    if (get) return handle_index(req.query);
  } else if (req.path == "/healthz") {
    if (get) return handle_healthz();
  } else {
    return json_response(404, render_error("no such path (known: POST /route, POST /observe, "
                                           "GET /index, GET /healthz, GET /metrics)"));
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
    const uint64_t predicted = predicted_hit(decision, query.request);
    const std::string id = ledger.issue(decision.candidates[decision.chosen].worker, predicted,
                                        query.request.by_hashes ? 0 : query.request.tokens.size(),
                                        RouteLedger::Clock::now());
    return json_response(200, render_route_decision(decision, id, predicted));
  } catch (const std::invalid_argument& e) {
    ++bad_requests;
    return json_response(400, render_error(e.what()));
  }
}

HttpResponse RouterService::Impl::handle_observe(std::string_view body) {
  ObserveQuery query;
  try {
    query = parse_observe_request(body);
  } catch (const RouteRequestError& e) {
    std::lock_guard lock(mutex);
    ledger.refuse(ObserveRefusal::kMalformed);
    return json_response(400, render_error(e.what()));
  }
  std::lock_guard lock(mutex);
  const RouteLedger::Observation seen =
      ledger.observe(query.route_id, query.worker, query.hit_tokens, RouteLedger::Clock::now());
  if (!seen.accepted) return json_response(http_status(seen.refusal), render_error(seen.message));
  return json_response(
      200, render_observation(query.route_id, seen.worker, seen.predicted, query.hit_tokens));
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
  write_overlap_metrics(out, s.ledger);
  return out.str();
}

}  // namespace radixkv::router
