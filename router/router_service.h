// RouterService: the `radixkv router` process — one BlockIndex (router/block_index.h) fed by the
// workers' KV event streams (router/event_feed.h) and an HTTP server (cpp-httplib) over it:
//
//   POST /route    the worker for a request (router/route_api.h; cost: router/route_cost.h).
//                  Without candidates, every worker that is up, at load 0.
//   GET  /index?worker=NAME   the blocks the index says NAME holds (for operators and tests)
//   GET  /metrics  Prometheus text format: metrics() below
//   GET  /healthz  {"status": "ok", "workers": [{"name", "state", "next_seq", "pages"}...]}
//
// One mutex serialises the index between the feed thread and the HTTP threads. A worker the feed
// loses track of (a gap replay cannot fill, a batch that does not decode, silence past the
// timeout) has its entries cleared. start() and stop() are called by one thread; stop() is
// graceful (the HTTP server finishes the requests it is serving) and idempotent.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "router/event_feed.h"
#include "router/route_cost.h"

namespace radixkv::router {

struct RouterOptions {
  std::vector<WorkerEndpoints> workers;
  std::string topic;
  std::string http_host = "127.0.0.1";
  int http_port = 8000;  // 0: any free port (see port())
  size_t max_index_pages = 1'000'000;
  std::chrono::milliseconds worker_timeout{10'000};
  CostWeights weights;
};

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
  //   radixkv_router_index_evicted_pages_total, radixkv_router_decisions_total{outcome},
  //   radixkv_router_bad_requests_total.
  std::string metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace radixkv::router
