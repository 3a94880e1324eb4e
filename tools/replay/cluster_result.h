// What cluster mode adds to a replay's report (ReplayResult::cluster); tools/replay/
// cluster_replay.h says how it is measured, docs/cluster.md what it shows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "router/overlap_gap.h"
#include "tools/replay/engine_result.h"

namespace radixkv::tools {

struct ClusterWorkerResult {
  uint64_t requests = 0;        // routed to this worker
  uint64_t prompt_tokens = 0;   // their prompts, at first admission
  uint64_t hit_tokens = 0;      // of which reused from this worker's cache
  double peak_load_blocks = 0;  // the most blocks of unfinished requests it had at once
  double busy_seconds = 0;      // simulated seconds of the steps it ran: its work
  uint64_t preemptions = 0;
  uint64_t evicted_pages = 0;
  // Predicted against delivered (router/overlap_gap.h): per request routed here and admitted, the
  // hit the router's index predicted when it chose this worker next to the hit_tokens the worker
  // reused at first admission.
  router::OverlapGap overlap;
  double hit_rate() const {
    return prompt_tokens == 0
               ? 0.0
               : static_cast<double>(hit_tokens) / static_cast<double>(prompt_tokens);
  }
};

struct ClusterResult {
  uint32_t workers = 0;
  std::string route;  // round-robin, least-loaded, prefix, prefix-load
  double overlap_weight = 1.0;
  double event_delay_s = 0;  // from a step's end to the router applying its events
  std::string schedule;      // each worker's scheduler
  CostModel cost;
  uint64_t routed_to_overlap = 0;  // requests sent to a worker holding >= 1 of their blocks
  uint64_t event_batches = 0;      // KV event batches the router's index applied
  // Over all workers: finished, steps, preemptions, hit and prefill tokens, simulated seconds
  // (first arrival to last finish) and the TTFT percentiles of every request.
  EngineRun total;
  double load_imbalance = 0;   // max / mean of the workers' busy_seconds (1: perfectly even)
  router::OverlapGap overlap;  // the workers' sums
  std::vector<ClusterWorkerResult> per_worker;
};

}  // namespace radixkv::tools
