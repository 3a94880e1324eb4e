#include "tools/cli/engine_cli.h"

#include <fmt/format.h>

#include "tools/cli/cli.h"
#include "tools/replay/replay_report.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

std::vector<FlagSpec> engine_flags() {
  const SchedulerConfig s;
  const CostModel c;
  return {
      {"pool-bytes", "SIZE",
       "engine mode: the KV pool shared by running sequences and the cache, e.g. 40GiB "
       "(--cache-bytes and --capacity-tokens mean the same there)"},
      {"schedule", "NAME", "engine mode: fcfs, lpm, share or lpm-share (default lpm)"},
      {"no-cache", "", "engine mode: run only with caching off (default: both, side by side)"},
      {"max-running", "N",
       fmt::format("engine mode: running requests at most (default {})", s.max_running)},
      {"chunk-tokens", "N",
       fmt::format("engine mode: prefill tokens per step (default {})", s.chunk_tokens)},
      {"prefill-s-per-token", "SECONDS",
       fmt::format("engine cost model: prefill seconds per token (default {})",
                   c.prefill_s_per_token)},
      {"decode-s-per-step", "SECONDS",
       fmt::format("engine cost model: fixed seconds per step (default {})", c.decode_s_per_step)},
      {"decode-s-per-seq", "SECONDS",
       fmt::format("engine cost model: seconds per decoding sequence per step (default {})",
                   c.decode_s_per_seq)},
  };
}

void reject_engine_flags(const Args& args) {
  for (const FlagSpec& flag : engine_flags()) {
    if (args.has(flag.name)) {
      throw UsageError(fmt::format("--{}: engine mode only (add --mode engine)", flag.name));
    }
  }
}

EngineReplayConfig engine_config(const Args& args, const KvLayout& layout, const std::string& model,
                                 const std::string& policy, const EnginePool& pool) {
  EngineReplayConfig config;
  config.layout = layout;
  config.model = model;
  config.policy = policy;
  config.pool_pages = pool.pages;
  config.schedule = args.get_or("schedule", "lpm");
  try {
    SchedulerConfig::from_schedule(config.schedule);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("--schedule: {}", e.what()));
  }
  config.no_cache = args.has("no-cache");
  const auto count = [&](const char* name, uint32_t& field) {
    if (auto v = args.get(name)) {
      const std::string flag = fmt::format("--{}", name);
      const uint64_t n = parse_count(*v, flag);
      if (n < 1 || n > (1u << 30)) {
        throw UsageError(fmt::format("{}: {} is outside [1, 2^30]", flag, n));
      }
      field = static_cast<uint32_t>(n);
    }
  };
  count("max-running", config.scheduler.max_running);
  count("chunk-tokens", config.scheduler.chunk_tokens);
  const auto real = [&](const char* name, double& field) {
    if (auto v = args.get(name)) field = parse_real(*v, fmt::format("--{}", name), 0.0, 1e6);
  };
  real("prefill-s-per-token", config.cost.prefill_s_per_token);
  real("decode-s-per-step", config.cost.decode_s_per_step);
  real("decode-s-per-seq", config.cost.decode_s_per_seq);
  return config;
}

int run_engine_replay(const Trace& trace, EngineReplayConfig config, const EnginePool& pool,
                      bool json, std::ostream& out, std::ostream& err) {
  ReplayResult result;
  try {
    result = replay_engine(trace, config);
  } catch (const PoolTooSmall& e) {
    throw UsageError(fmt::format("{}: {}; give a larger pool", pool.flag, e.what()));
  }
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
