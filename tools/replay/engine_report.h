// The engine-mode part of a replay's report (replay_report.h calls these when mode == "engine").
//
// JSON keys added at the top level: schedule, cache_enabled, max_running, chunk_tokens,
// out_of_order_requests,
// cost_model ({prefill_s_per_token, decode_s_per_step, decode_s_per_seq}), steps, preemptions,
// readmitted, rejected, held, prefill_tokens, output_tokens, peak_running, peak_waiting,
// simulated_seconds, ttft_p50_seconds, ttft_p90_seconds, ttft_p99_seconds, ttft_mean_seconds,
// ttft_max_seconds, output_tokens_per_second, requests_per_simulated_second; and no_cache: the
// same keys plus hit_rate for the run with caching off (null when it was not run).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "tools/replay/engine_result.h"

namespace radixkv::tools {

// Lines to append to the text report: the schedule, the cost model and a table of the run with
// the cache beside the run without it.
std::string format_engine_text(const EngineResult& engine, uint64_t input_tokens);
// {prefill_s_per_token, decode_s_per_step, decode_s_per_seq}
nlohmann::ordered_json cost_model_json(const CostModel& cost);
// Adds one run's keys (cache_enabled, steps ... requests_per_simulated_second) to a report object.
void add_run_json(nlohmann::ordered_json& out, const EngineRun& run);
// Adds the engine's keys to a report object.
void add_engine_json(nlohmann::ordered_json& out, const EngineResult& engine,
                     uint64_t input_tokens);

}  // namespace radixkv::tools
