#include "tools/cli/cluster_cli.h"

#include <fmt/format.h>

#include "tools/cli/cli.h"
#include "tools/replay/replay_report.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

constexpr uint64_t kMaxWorkers = 1024;
constexpr double kMaxEventDelay = 1e9;  // about 32 years: more than any trace spans

void declare_cluster_flags(CommandLine& cli, ClusterFlags& f) {
  cli.count("--workers", f.workers, "N",
            "cluster mode: engines behind the router, each with a pool of --pool-bytes (default 2)",
            1, kMaxWorkers);
  cli.text("--route", f.route, "NAME",
           fmt::format("cluster mode: how the router picks a worker (default prefix; known: {})",
                       route_policy_names()));
  cli.real("--overlap-weight", f.overlap_weight, "W",
           "cluster mode, --route prefix-load: weight of the blocks to prefill against the load "
           "(Dynamo's overlap_score_weight, default 1)",
           0, 1e9);
  cli.real("--event-delay", f.event_delay, "SECONDS",
           "cluster mode: simulated seconds from the end of a worker's step to the router applying "
           "its KV events (default 0: at once)",
           0, kMaxEventDelay);
}

std::vector<std::string> cluster_only_flags() {
  return {"--workers", "--route", "--overlap-weight", "--event-delay"};
}

ClusterReplayConfig cluster_config(const CommandLine& cli, const ClusterFlags& f,
                                   EngineReplayConfig engine) {
  ClusterReplayConfig config;
  config.engine = std::move(engine);
  config.workers = static_cast<uint32_t>(f.workers);
  try {
    config.route = parse_route_policy(f.route);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{}: {}", cli.describe("--route"), e.what()));
  }
  if (cli.given("--overlap-weight") && config.route != RoutePolicy::kPrefixLoad) {
    throw UsageError(fmt::format("{}: only --route prefix-load has a cost to weigh",
                                 cli.describe("--overlap-weight")));
  }
  config.weights.overlap_score_weight = f.overlap_weight;
  config.event_delay_s = f.event_delay;
  return config;
}

int run_cluster_replay(const Trace& trace, const ClusterReplayConfig& config,
                       const EnginePool& pool, bool json, std::ostream& out, std::ostream& err) {
  ReplayResult result;
  try {
    result = replay_cluster(trace, config);
  } catch (const PoolTooSmall& e) {
    throw UsageError(fmt::format("{}: {}; give each worker a larger pool", pool.flag, e.what()));
  }
  out << (json ? format_report_json(result) + "\n" : format_report_text(result));
  if (!result.ok()) {
    err << fmt::format("radixkv replay: error: {} pages leaked{}{} (cluster mode)\n",
                       result.pages_leaked, result.accounting_error.empty() ? "" : "; ",
                       result.accounting_error);
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace radixkv::tools
