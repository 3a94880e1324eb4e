// The engine-mode part of `radixkv replay` (cmd_replay.cpp calls these): its flags, their checks,
// and the run with its report. Every bad flag is a UsageError naming it, raised before the trace
// is read; a pool too small for a request of the trace is a UsageError naming the pool's flag.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/cli/args.h"
#include "tools/replay/engine_replay.h"

namespace radixkv::tools {

// Flags only engine mode reads: --pool-bytes, --schedule, --no-cache, --max-running,
// --chunk-tokens and the cost model's --prefill-s-per-token, --decode-s-per-step,
// --decode-s-per-seq.
std::vector<FlagSpec> engine_flags();
// In cache mode: refuses any engine flag.
void reject_engine_flags(const Args& args);

// `pool_flag` names the flag the pool came from ("--pool-bytes", "--cache-bytes",
// "--capacity-tokens"), for error messages.
struct EnginePool {
  uint64_t pages = 0;
  std::string flag;
};
EngineReplayConfig engine_config(const Args& args, const KvLayout& layout, const std::string& model,
                                 const std::string& policy, const EnginePool& pool);

// Runs the replay and prints the report (text or JSON); returns the exit status.
int run_engine_replay(const Trace& trace, EngineReplayConfig config, const EnginePool& pool,
                      bool json, std::ostream& out, std::ostream& err);

}  // namespace radixkv::tools
