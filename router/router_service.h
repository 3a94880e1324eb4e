// RouterService: the `radixkv router` process — one BlockIndex (router/block_index.h) fed by the
// workers' KV event streams (router/event_feed.h) and an HTTP server (router/http_server.h) over
// it:
//
//   POST /route    the worker for a request (router/route_api.h; cost: router/route_cost.h).
//                  Without candidates, every worker that is up, at load 0. The answer carries a
//                  route_id and the hit the index predicts on the chosen worker.
//   POST /observe  the hit the engine delivered for a route_id (router/route_ledger.h): the
//                  predicted and delivered overlap per worker, and their gap, in metrics().
//   GET  /index?worker=NAME   the blocks the index says NAME holds (for operators and tests)
//   GET  /metrics  Prometheus text format: metrics() below
//   GET  /healthz  {"status": "ok", "workers": [{"name", "state", "next_seq", "pages"}...]}
//
// One mutex serialises the index between the feed thread and the HTTP thread. The feed applies an
// event kPartBlocks blocks at a time, taking the mutex for each part, so that a route waits for at
// most one part, never a whole batch. A worker the feed loses track of (a gap replay cannot fill,
// a batch that does not decode, silence past the timeout) has its entries cleared. start() and
// stop() are called by one thread; stop() is prompt (router/http_server.h) and idempotent.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "router/event_feed.h"
#include "router/http_server.h"
#include "router/route_cost.h"
#include "router/tier_weights.h"

namespace radixkv::router {

struct RouterOptions {
  std::vector<WorkerEndpoints> workers;
  std::string topic;
  std::string http_host = "127.0.0.1";
  int http_port = 8000;  // 0: any free port (see port())
  HttpLimits http;
  size_t max_index_pages = 1'000'000;
  size_t max_batch_bytes = 64u << 20;
  std::chrono::milliseconds worker_timeout{10'000};
  size_t max_pending_routes = 65'536;            // routes kept for POST /observe
  std::chrono::milliseconds route_ttl{600'000};  // a route older than this cannot be observed
  CostWeights weights;
  TierWeights tiers;
};

inline constexpr size_t kPartBlocks = 4096;

class RouterService {
 public:
  // Checks the options and binds the HTTP port; throws std::invalid_argument naming what is wrong.
  explicit RouterService(RouterOptions options);
  ~RouterService();
  RouterService(const RouterService&) = delete;
  RouterService& operator=(const RouterService&) = delete;

  int port() const;
  void start();
  void stop();

  // The Prometheus exposition (text format 0.0.4) of the router's counters and gauges:
  //   radixkv_router_batches_applied_total{worker}, radixkv_router_events_applied_total{worker,
  //   type}, radixkv_router_replay_requests_total{worker}, radixkv_router_gaps_unfilled_total{
  //   worker}, radixkv_router_decode_errors_total{worker}, radixkv_router_worker_down_total{
  //   worker}, radixkv_router_worker_up{worker}, radixkv_router_index_pages{worker},
  //   radixkv_router_index_pages_total, radixkv_router_index_max_pages,
  //   radixkv_router_index_evicted_pages_total, radixkv_router_index_refused_blocks_total,
  //   radixkv_router_batches_discarded_total{worker}, radixkv_router_decisions_total{outcome},
  //   radixkv_router_bad_requests_total, radixkv_router_http_requests_total,
  //   radixkv_router_http_rejected_total{reason}, radixkv_router_internal_errors_total,
  //   radixkv_router_observations_total{worker},
  //   radixkv_router_predicted_overlap_tokens_total{worker},
  //   radixkv_router_delivered_overlap_tokens_total{worker},
  //   radixkv_router_overlap_overpredicted_tokens_total{worker},
  //   radixkv_router_overlap_underpredicted_tokens_total{worker},
  //   radixkv_router_overlap_mispredicted_total{worker}, radixkv_router_overlap_gap_tokens
  //   (histogram), radixkv_router_observations_refused_total{reason}. worker="" sums the routes
  //   to candidates that are no configured worker.
  std::string metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace radixkv::router
