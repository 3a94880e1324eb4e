// The cluster-mode part of a replay's report (replay_report.h calls these when mode == "cluster").
//
// JSON keys added at the top level: workers, route, overlap_weight, event_delay_seconds, schedule,
// cost_model, routed_to_overlap, event_batches, load_imbalance, overlap (predicted against
// delivered over all workers: {observations, predicted_tokens, delivered_tokens,
// overpredicted_tokens, underpredicted_tokens, mispredicted, gap_tokens}, router/overlap_gap.h),
// the run's keys of engine mode (steps ... ttft_p50_seconds, ttft_p99_seconds ...: add_run_json,
// over all workers), and per_worker: one object per worker {requests, prompt_tokens, hit_tokens,
// hit_rate, peak_load_blocks, busy_seconds, preemptions, evictions, overlap}. The cluster's
// hit_rate is the report's own.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "tools/replay/cluster_result.h"

namespace radixkv::tools {

std::string format_cluster_text(const ClusterResult& cluster);
void add_cluster_json(nlohmann::ordered_json& out, const ClusterResult& cluster);

}  // namespace radixkv::tools
