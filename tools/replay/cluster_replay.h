// Cluster mode: the trace served by N simulated engines behind a cache-aware router, on one
// simulated clock (docs/cluster.md, "Cluster replay").
//
//   - Each worker is one engine of engine mode (tools/replay/engine_replay.h): the reference
//     scheduler and a runtime over its own KV pool of `engine.pool_pages` pages, with the same
//     schedule, policy, watermarks, window and cost model. Its runtime reports its tier events to
//     an events::EventBatcher, one batch per runtime call, exactly as a publishing engine does.
//   - One clock. Requests arrive at their trace times, in arrival order (engine mode's order). The
//     replay always does the earliest thing next: route the next arrival, or run one step of the
//     worker whose clock is earliest (an arrival first at a tie). A step starts at its worker's
//     clock and takes the cost model's price; a worker with nothing to do waits for its next
//     request. A routed request joins its worker's queue, entering the scheduler (at most `window`
//     waiting) at the worker's next step.
//   - The router is the router service's code in process: a router::BlockIndex fed by the
//     workers' event batches (no sockets). A batch becomes visible at the end of the step that
//     produced it: a request routed at time t sees every batch of steps that ended by t, and none
//     of later ones — what a router receiving events over the network would know, with no delay.
//   - Routing (tools/replay/cluster_routing.h) is given each worker's overlap with the request's
//     block hashes (events/block_hash.h: its whole prompt pages in its namespace) and its load: the
//     blocks (prompt tokens / page tokens) of the requests routed to it that have not finished.
//   - Reported: the cluster's hit rate (hit tokens over prompt tokens, at first admission, as in
//     engine mode), per worker (requests, hit rate, peak load, busy seconds), TTFT percentiles
//     over every request (arrival to the end of the step that sampled its first token), and the
//     load imbalance: max / mean of the workers' busy seconds.
//   - At the end every worker's runtime is checked as in engine mode and its pages counted; a leak
//     or a broken check is reported in the result (ReplayResult::ok()), as in engine mode.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "router/route_cost.h"
#include "tools/replay/cluster_routing.h"
#include "tools/replay/engine_replay.h"
#include "tools/replay/replay_result.h"
#include "tools/trace/trace.h"

namespace radixkv::tools {

// One routing decision, as the router saw it.
struct RouteRecord {
  uint32_t request = 0;  // trace index
  double time = 0;       // arrival
  std::vector<uint32_t> overlaps;
  std::vector<double> loads;
  double request_blocks = 0;
  uint32_t chosen = 0;
};

struct ClusterReplayConfig {
  // One worker: its pool (pool_pages each), policy, watermarks, schedule, window, cost model.
  // compare_no_cache, no_cache, host, events and at_end are not used here.
  EngineReplayConfig engine;
  uint32_t workers = 2;
  RoutePolicy route = RoutePolicy::kPrefix;
  router::CostWeights weights;  // prefix-load's cost
  // Called with every decision, in routing order (tests compare each with a model).
  std::function<void(const RouteRecord&)> on_route;
};

// Throws PoolTooSmall when a request could never fit one worker's pool, std::invalid_argument for
// a bad engine configuration, 0 workers or a bad weight.
ReplayResult replay_cluster(const Trace& trace, const ClusterReplayConfig& config);

}  // namespace radixkv::tools
