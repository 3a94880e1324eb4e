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
//     workers' event batches (no sockets). A batch is delivered to the index `event_delay_s`
//     simulated seconds after the end of the step that produced it (0: at its end): a request
//     routed at time t sees every batch delivered by t, and none later — what a router receiving
//     events over a network with that delay would know. Deliveries are the loop's third kind of
//     thing: in delivery time order, before an arrival or a step at the same time, ties between
//     workers to the smaller number (a worker's own batches are due in the order it made them).
//     Batches due after the last arrival are never applied: nothing is routed after it.
//   - Routing (tools/replay/cluster_routing.h) is given each worker's overlap with the request's
//     block hashes (events/block_hash.h: its whole prompt pages in its namespace) and its load: the
//     blocks (prompt tokens / page tokens) of the requests routed to it that have not finished.
//   - Predicted against delivered (router/overlap_gap.h, as the router service's POST /observe):
//     per routed request, the chosen worker's overlap in tokens, cut as the engine cuts its match
//     (router::predicted_hit_tokens), against the tokens it reused at first admission; summed per
//     worker and over the cluster. With fresh events (delay 0) a request admitted at once on an
//     idle worker is predicted exactly; the gap comes from what changes between routing and
//     admission (requests of the worker still running or queued then) and from the delay.
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
  // The chosen worker's overlap in tokens, cut as an engine cuts its match: the predicted hit.
  uint64_t predicted_hit_tokens = 0;
};

struct ClusterReplayConfig {
  // One worker: its pool (pool_pages each), policy, watermarks, schedule, window, cost model.
  // compare_no_cache, no_cache, host, events and at_end are not used here.
  EngineReplayConfig engine;
  uint32_t workers = 2;
  RoutePolicy route = RoutePolicy::kPrefix;
  router::CostWeights weights;  // prefix-load's cost
  double event_delay_s = 0;     // simulated seconds from a step's end to its events' delivery
  // Called with every decision, in routing order (tests compare each with a model).
  std::function<void(const RouteRecord&)> on_route;
};

// Throws PoolTooSmall when a request could never fit one worker's pool, std::invalid_argument for
// a bad engine configuration, 0 workers, a bad weight or an event delay that is negative or not
// finite.
ReplayResult replay_cluster(const Trace& trace, const ClusterReplayConfig& config);

}  // namespace radixkv::tools
