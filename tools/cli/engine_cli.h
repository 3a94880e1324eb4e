// The engine-mode part of `radixkv replay` (cmd_replay.cpp calls these): its flags, their checks,
// and the run with its report. Every bad flag is a UsageError naming it, raised before the trace
// is read; a pool too small for a request of the trace is a UsageError naming the pool's flag.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/cli/flags.h"
#include "tools/replay/engine_replay.h"

namespace radixkv::tools {

// What the engine-only flags say: --schedule, --no-cache, --max-running, --chunk-tokens and the
// cost model's --prefill-s-per-token, --decode-s-per-step, --decode-s-per-seq.
struct EngineFlags {
  std::string schedule = "lpm";
  bool no_cache = false;
  uint64_t max_running = SchedulerConfig{}.max_running;
  uint64_t chunk_tokens = SchedulerConfig{}.chunk_tokens;
  CostModel cost;
};

void declare_engine_flags(CommandLine& cli, EngineFlags& flags);
// The flags only engine mode reads (--pool-bytes too), for cache mode to refuse.
std::vector<std::string> engine_only_flags();

// `pool_flag` names the flag the pool came from ("--pool-bytes", "--cache-bytes",
// "--capacity-tokens"), for error messages.
struct EnginePool {
  uint64_t pages = 0;
  std::string flag;
};
// The replay's configuration; throws UsageError naming a bad flag.
EngineReplayConfig engine_config(const EngineFlags& flags, const KvLayout& layout,
                                 const std::string& model, const std::string& policy,
                                 const EnginePool& pool);

// What the rest of the command line adds to one replay: its tier events, a look at the final tree,
// and fields of the report (tools/cli/events_flags.h).
struct ReplayHooks {
  TierEvents* events = nullptr;
  std::function<void(const RadixTree&)> at_end;
  std::function<void(ReplayResult&)> report = [](ReplayResult&) {};
};

// Runs the replay and prints the report (text or JSON); returns the exit status.
int run_engine_replay(const Trace& trace, EngineReplayConfig config, const EnginePool& pool,
                      bool json, std::ostream& out, std::ostream& err,
                      const std::function<void(ReplayResult&)>& report = {});

}  // namespace radixkv::tools
