// The parts of engine mode (tools/replay/engine_replay.h) that the cluster replay
// (tools/replay/cluster_replay.h) runs too, so that one engine behaves the same in both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/prefix_cache_runtime.h"
#include "sim/scheduler.h"
#include "tools/replay/engine_replay.h"
#include "tools/trace/trace.h"

namespace radixkv::tools {

// Throws PoolTooSmall when a request could never fit one engine's pool, std::invalid_argument for
// a bad pool size, window, schedule, scheduler field, policy or host tier.
void check_engine_config(const Trace& trace, const EngineReplayConfig& config);
// The scheduler's configuration: `schedule` sets its policy, calls are timed.
SchedulerConfig scheduler_config(const EngineReplayConfig& config, bool use_cache);
// Request `index` of the trace as the scheduler takes it: its prompt, and its answer content as
// the tokens its decode samples; id = index.
SchedRequest sched_request(const Trace& trace, TokenExpander& expander, uint32_t index);
// Request indices in arrival order (engine_replay.h); counts the requests out of file order.
std::vector<uint32_t> arrival_order(const Trace& trace, uint64_t& out_of_order);
// Sorts `ttft` and fills the run's TTFT percentiles, mean and max.
void summarise_ttft(std::vector<double>& ttft, EngineRun& run);

}  // namespace radixkv::tools
