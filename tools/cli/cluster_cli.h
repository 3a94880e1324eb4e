// The cluster-mode part of `radixkv replay` (cmd_replay.cpp calls these): --workers, --route,
// --overlap-weight and --event-delay, their checks, and the run with its report
// (tools/replay/cluster_replay.h). Cluster mode also reads every engine-mode flag: each worker is
// one such engine, with a pool of
// --pool-bytes (or --cache-bytes, --capacity-tokens) of its own.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/cli/engine_cli.h"
#include "tools/cli/flags.h"
#include "tools/replay/cluster_replay.h"

namespace radixkv::tools {

struct ClusterFlags {
  uint64_t workers = 2;
  std::string route = "prefix";
  double overlap_weight = 1.0;
  double event_delay = 0;  // simulated seconds
};

void declare_cluster_flags(CommandLine& cli, ClusterFlags& flags);
// The flags only cluster mode reads, for the other modes to refuse.
std::vector<std::string> cluster_only_flags();
// Throws UsageError naming a bad flag.
ClusterReplayConfig cluster_config(const CommandLine& cli, const ClusterFlags& flags,
                                   EngineReplayConfig engine);
// Runs the replay and prints the report (text or JSON); returns the exit status.
int run_cluster_replay(const Trace& trace, const ClusterReplayConfig& config,
                       const EnginePool& pool, bool json, std::ostream& out, std::ostream& err);

}  // namespace radixkv::tools
