#include "tools/cli/engine_cli.h"

#include <fmt/format.h>

#include "tools/cli/cli.h"
#include "tools/replay/replay_report.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

void declare_engine_flags(CommandLine& cli, EngineFlags& f) {
  const CostModel c;
  cli.text("--schedule", f.schedule, "NAME",
           "engine mode: fcfs, lpm, share or lpm-share (default lpm)");
  cli.flag("--no-cache", f.no_cache,
           "engine mode: run only with caching off (default: both, side by side)");
  cli.count("--max-running", f.max_running, "N",
            fmt::format("engine mode: running requests at most (default {})", f.max_running), 1,
            1u << 30);
  cli.count("--chunk-tokens", f.chunk_tokens, "N",
            fmt::format("engine mode: prefill tokens per step (default {})", f.chunk_tokens), 1,
            1u << 30);
  cli.real("--prefill-s-per-token", f.cost.prefill_s_per_token, "SECONDS",
           fmt::format("engine cost model: prefill seconds per token (default {})",
                       c.prefill_s_per_token),
           0.0, 1e6);
  cli.real(
      "--decode-s-per-step", f.cost.decode_s_per_step, "SECONDS",
      fmt::format("engine cost model: fixed seconds per step (default {})", c.decode_s_per_step),
      0.0, 1e6);
  cli.real("--decode-s-per-seq", f.cost.decode_s_per_seq, "SECONDS",
           fmt::format("engine cost model: seconds per decoding sequence per step (default {})",
                       c.decode_s_per_seq),
           0.0, 1e6);
}

std::vector<std::string> engine_only_flags() {
  return {"--pool-bytes",        "--schedule",        "--no-cache",
          "--max-running",       "--chunk-tokens",    "--prefill-s-per-token",
          "--decode-s-per-step", "--decode-s-per-seq"};
}

EngineReplayConfig engine_config(const EngineFlags& flags, const KvLayout& layout,
                                 const std::string& model, const std::string& policy,
                                 const EnginePool& pool) {
  EngineReplayConfig config;
  config.layout = layout;
  config.model = model;
  config.policy = policy;
  config.pool_pages = pool.pages;
  config.schedule = flags.schedule;
  try {
    SchedulerConfig::from_schedule(config.schedule);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("--schedule: {}", e.what()));
  }
  config.no_cache = flags.no_cache;
  config.scheduler.max_running = static_cast<uint32_t>(flags.max_running);
  config.scheduler.chunk_tokens = static_cast<uint32_t>(flags.chunk_tokens);
  config.cost = flags.cost;
  return config;
}

int run_engine_replay(const Trace& trace, EngineReplayConfig config, const EnginePool& pool,
                      bool json, std::ostream& out, std::ostream& err,
                      const std::function<void(ReplayResult&)>& report) {
  ReplayResult result;
  try {
    result = replay_engine(trace, config);
  } catch (const PoolTooSmall& e) {
    throw UsageError(fmt::format("{}: {}; give a larger pool", pool.flag, e.what()));
  }
  if (report) report(result);
  out << (json ? format_report_json(result) + "\n" : format_report_text(result));
  if (!result.ok()) {
    err << fmt::format("radixkv replay: error: {} pages leaked{}{} (engine mode, {} pages)\n",
                       result.pages_leaked, result.accounting_error.empty() ? "" : "; ",
                       result.accounting_error, result.capacity_pages);
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace radixkv::tools
