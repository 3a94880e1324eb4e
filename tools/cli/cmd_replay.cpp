// `radixkv replay`: flags (and --config) -> a plan (layout, budgets, watermarks, policies) ->
// the trace -> replay(s) -> report, table, plot.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>

#include "eviction/policy_registry.h"
#include "kv_store/heap.h"
#include "kv_store/page_pool.h"
#include "tools/cli/activity.h"
#include "tools/cli/budget.h"
#include "tools/cli/cli.h"
#include "tools/cli/cluster_cli.h"
#include "tools/cli/config_file.h"
#include "tools/cli/disk_flags.h"
#include "tools/cli/engine_cli.h"
#include "tools/cli/events_flags.h"
#include "tools/cli/flags.h"
#include "tools/cli/metrics_endpoint.h"
#include "tools/cli/output_path.h"
#include "tools/cli/progress_bar.h"
#include "tools/cli/remote_flags.h"
#include "tools/cli/tier_flags.h"
#include "tools/replay/belady_policy.h"
#include "tools/replay/cache_replay.h"
#include "tools/replay/host_tier_report.h"
#include "tools/replay/parallel_cells.h"
#include "tools/replay/replay_report.h"
#include "tools/replay/sweep_plot.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

constexpr uint32_t kDefaultPageTokens = 16;
constexpr uint32_t kMaxPageTokens = 1u << 20;
constexpr uint64_t kDefaultCapacityTokens = 1u << 18;  // 32 GiB of llama-3-8b KV
constexpr const char* kDefaultModel = "llama-3-8b";
constexpr const char* kDefaultPlot = "radixkv-sweep.svg";
constexpr const char* kDefaultTraceName = "built-in default trace (= `radixkv gen` with no flags)";
// Watermarks when none are given: cache mode evicts only on demand, engine mode as the runtime.
const Watermarks kCacheWatermarks{1.0, 1.0};
const Watermarks kEngineWatermarks{0.95, 0.85};

// Budget flags are alternatives: one given on the command line (or in a config table) overrides
// every other one of them from a lower layer of the config file.
constexpr std::string_view kBudgetFlags[] = {"--capacity-tokens", "--cache-bytes", "--pool-bytes",
                                             "--sweep"};

constexpr const char* kDescription =
    "Replays a trace against the radix prefix cache and reports the token-weighted hit rate,\n"
    "tokens and bytes reused, evictions, peak cached bytes, pages leaked (always 0 unless a\n"
    "bug), and the speed of the cache. With no --trace it replays the built-in multi-turn\n"
    "trace; --trace - reads standard input. Cache mode (docs/design.md) replays one request at\n"
    "a time, caching only prompts, with page-by-page eviction from the policy's victim leaf\n"
    "(and, with watermarks below 1, batch eviction once the high one is passed). Engine mode\n"
    "(docs/engine.md) serves the trace with the reference batch scheduler on one KV pool\n"
    "(--pool-bytes) and a simulated clock, and reports time to first token and throughput with\n"
    "the cache and without it, side by side. Budget flags may also come from --config FILE\n"
    "(TOML; docs/trace_format.md), flags winning. --host-capacity-tokens puts a host tier under\n"
    "the cache in either mode (docs/tiers.md).";

struct ReplayFlags {
  std::string trace, format, mode = "cache", model = kDefaultModel, policy = "lru";
  std::string sweep, plot = kDefaultPlot, config;
  uint64_t page_tokens = kDefaultPageTokens, block_tokens = 0;
  uint64_t capacity_tokens = kDefaultCapacityTokens, cache_bytes = 0, pool_bytes = 0;
  std::string high_watermark, low_watermark;
  std::vector<std::string> quotas;
  bool json = false, skip_bad = false, no_progress = false, mrc = false, partial_reuse = false;
  std::string metrics_listen, hints = "off";
  double metrics_linger = 0;
  uint64_t jobs = default_jobs();
  EngineFlags engine;
  TierFlags tiers;
  RemoteFlags remote;
  DiskFlags disk;
  EventsFlags events;
  ClusterFlags cluster;
};

void declare_replay_flags(CommandLine& cli, ReplayFlags& f) {
  cli.text("--trace", f.trace, "PATH",
           "trace file, a folder of agentic sessions, or - for standard input (default: the "
           "built-in trace)");
  cli.text("--format", f.format, "NAME",
           fmt::format("one of {} (default: guessed from the first record)", format_names()));
  cli.count("--block-tokens", f.block_tokens, "N",
            fmt::format("tokens per hash id of a mooncake or bailian trace (default {} and {})",
                        kMooncakeBlockTokens, kBailianBlockTokens),
            1, kMaxInputTokens);
  cli.text("--mode", f.mode, "NAME",
           "cache (one request at a time, as published hit-rate curves), engine, or cluster "
           "(--workers engines behind a cache-aware router)");
  cli.count("--page-tokens", f.page_tokens, "N",
            fmt::format("tokens per KV page (default {})", kDefaultPageTokens), 1, kMaxPageTokens);
  cli.count("--capacity-tokens", f.capacity_tokens, "N",
            fmt::format("cache capacity in tokens, e.g. 1e6 (default {})", kDefaultCapacityTokens));
  cli.size("--cache-bytes", f.cache_bytes,
           "cache capacity in bytes of KV, e.g. 40GiB (converted with --model)");
  cli.size("--pool-bytes", f.pool_bytes,
           "engine mode: the KV pool shared by running sequences and the cache, e.g. 40GiB "
           "(--cache-bytes and --capacity-tokens mean the same there)");
  const auto threshold = units_validator([](const std::string& v) { parse_threshold(v); });
  cli.text("--high-watermark", f.high_watermark, "FRACTION|SIZE",
           "evict once cached pages pass this: a fraction of the budget (0.95) or a size (38GiB); "
           "default 1 in cache mode (on demand only), 0.95 in engine mode")
      ->check(threshold);
  cli.text("--low-watermark", f.low_watermark, "FRACTION|SIZE",
           "... down to this; default the high one in cache mode, 0.85 in engine mode")
      ->check(threshold);
  cli.texts("--quota", f.quotas, "NS=MIN:MAX",
            "cache mode: tenant quota of namespace NS (repeatable; a comma list too): it keeps at "
            "least MIN of the budget against other namespaces' pressure and gives its own pages "
            "first at MAX, each a fraction (0.25) or a size (2GiB), MAX 1 when left out; the "
            "report gives each such namespace's hit rate (docs/policies.md, Quotas)")
      ->check(units_validator([](const std::string& v) { parse_quotas({v}, ""); }));
  cli.text("--model", f.model, "PRESET",
           fmt::format("KV layout that converts tokens to bytes (default {}; known: {})",
                       kDefaultModel, fmt::join(KvLayout::preset_names(), ", ")));
  cli.text("--policy", f.policy, "NAME",
           fmt::format("eviction policy (default lru; known: {}, and {}, the offline bound); "
                       "NAME:key=value sets parameters; with --sweep a comma-separated list draws "
                       "one line each",
                       fmt::join(policy_names(), ", "), kBeladyPolicyName));
  cli.text("--sweep", f.sweep, "CAP,CAP,...",
           "replay at each capacity (tokens like 1e6, or bytes like 8GiB); prints a table, writes "
           "a plot")
      ->check(units_validator(parse_capacity_list));
  cli.text("--plot", f.plot, "PATH",
           fmt::format("where --sweep writes its SVG plot (default {})", kDefaultPlot));
  cli.text("--config", f.config, "FILE",
           "TOML file of flags without their dashes ([cache] and [engine] tables for one mode)");
  cli.flag("--json", f.json, "print one JSON object on stdout instead of the text report");
  cli.flag("--skip-bad", f.skip_bad,
           "skip malformed trace records (and count them) instead of stopping");
  cli.flag("--no-progress", f.no_progress, "no progress bar, even on a terminal");
  cli.flag("--mrc", f.mrc,
           "keep the live miss-ratio curve (sampled reuse distances, SHARDS) and report LRU's hit "
           "rate at 1/4x to 8x the cache (JSON \"mrc\"; docs/metrics.md)");
  cli.text("--metrics-listen", f.metrics_listen, "HOST:PORT",
           "engine mode: serve the run's Prometheus metrics at http://HOST:PORT/metrics while it "
           "runs (a loopback address; port 0: any free one; the address goes to stderr); turns "
           "--mrc on");
  cli.real("--metrics-linger", f.metrics_linger, "SECONDS",
           "after the report, keep serving the final metrics this long (default 0)", 0, 86400);
  cli.flag("--partial-reuse", f.partial_reuse,
           "cache mode: also reuse the leading tokens of a cached page a prompt matches only in "
           "part, copying the page (TensorRT-LLM's enable_partial_reuse); reported as "
           "partial_hit_tokens");
  cli.text("--hints", f.hints, "off|online",
           "cache mode: online, every session's path is held between its requests for a time "
           "predicted from that session's gaps so far, within half the cache (a retention layer "
           "around each online policy; docs/policies.md, \"Retention hints and session holds\"); "
           "default off");
  cli.count("--jobs", f.jobs, "N",
            "replays of a sweep or of several policies run at once, each on its own tree; the "
            "output is the same for every N (default: the machine's cores)",
            1, 4096);
  declare_engine_flags(cli, f.engine);
  declare_tier_flags(cli, f.tiers);
  declare_remote_flags(cli, f.remote);
  declare_disk_flags(cli, f.disk);
  declare_events_flags(cli, f.events);
  declare_cluster_flags(cli, f.cluster);
}

bool is_budget_flag(std::string_view flag) {
  return std::find(std::begin(kBudgetFlags), std::end(kBudgetFlags), flag) !=
         std::end(kBudgetFlags);
}

// Which group of alternative flags `flag` is in: 0 the device budget, 1 the host capacity, -1 none.
int alternatives_group(std::string_view flag) {
  if (is_budget_flag(flag)) return 0;
  const std::vector<std::string_view> host = host_capacity_flags();
  return std::find(host.begin(), host.end(), flag) != host.end() ? 1 : -1;
}

// Applies --config: its top-level `mode` first (unless --mode was given), then the table of the
// mode, then the top level, each key only where nothing higher gave that flag. The budget flags
// count as one: a budget from a higher layer overrides any budget key below it.
void apply_config(CommandLine& cli, ReplayFlags& f) {
  const ConfigFile config = read_config(f.config);
  const auto check_keys = [&](const std::vector<ConfigSetting>& layer, bool top) {
    for (const ConfigSetting& s : layer) {
      const std::string flag = "--" + s.key;
      if (s.key == "mode" ? top : cli.has_flag(flag) && flag != "--config") continue;
      throw UsageError(fmt::format("--config {}: {} is not a setting of radixkv replay{}", s.origin,
                                   s.key, s.key == "mode" ? " inside a table" : ""));
    }
  };
  check_keys(config.top, true);
  for (const auto& [name, layer] : config.tables) {
    if (name != "cache" && name != "engine") {
      throw UsageError(fmt::format("--config {}: unknown table [{}] (known: [cache], [engine])",
                                   config.table_origins.at(name), name));
    }
    check_keys(layer, false);
  }
  for (const ConfigSetting& s : config.top) {
    if (s.key == "mode") cli.set_if_unset("--mode", s.value, "--config " + s.origin);
  }
  // Per group of alternatives (alternatives_group): whether a higher layer gave one.
  bool taken[2] = {false, false};
  for (std::string_view flag : kBudgetFlags) taken[0] = taken[0] || cli.given(flag);
  for (std::string_view flag : host_capacity_flags()) taken[1] = taken[1] || cli.given(flag);
  const auto apply = [&](const std::vector<ConfigSetting>& layer) {
    bool here[2] = {false, false};
    for (const ConfigSetting& s : layer) {
      const std::string flag = "--" + s.key;
      const int group = alternatives_group(flag);
      if (s.key == "mode" || (group >= 0 && taken[group])) continue;
      if (group >= 0) here[group] = true;
      if (s.value != "false") cli.set_if_unset(flag, s.value, "--config " + s.origin);
    }
    for (int g = 0; g < 2; ++g) taken[g] = taken[g] || here[g];
  };
  if (const auto table = config.tables.find(f.mode); table != config.tables.end()) {
    apply(table->second);
  }
  apply(config.top);
}

// Refuses flags the mode does not read, and combinations that make no sense.
void check_flags(const CommandLine& cli, const ReplayFlags& f) {
  if (f.mode != "cache" && f.mode != "engine" && f.mode != "cluster") {
    throw UsageError(fmt::format("{}: unknown mode '{}' (known: cache, engine, cluster)",
                                 cli.describe("--mode"), f.mode));
  }
  if (f.mode != "cluster") {
    for (const std::string& flag : cluster_only_flags()) {
      if (cli.given(flag)) {
        throw UsageError(
            fmt::format("{}: cluster mode only (add --mode cluster)", cli.describe(flag)));
      }
    }
  } else if (cli.given("--kv-events")) {
    throw UsageError(fmt::format(
        "{}: not in cluster mode (its workers feed the router in process; run one `radixkv replay "
        "--mode engine --kv-events ...` per worker and `radixkv router` to use sockets)",
        cli.describe("--kv-events")));
  } else if (cli.given("--no-cache")) {
    throw UsageError(fmt::format("{}: not in cluster mode (compare with --route instead)",
                                 cli.describe("--no-cache")));
  } else if (host_tier_given(cli)) {
    for (std::string_view flag : host_capacity_flags()) {
      if (cli.given(flag)) {
        throw UsageError(fmt::format("{}: not in cluster mode (its workers have no host tier)",
                                     cli.describe(flag)));
      }
    }
  }
  const bool engine = f.mode != "cache";  // cluster mode runs engines too
  if (engine) {
    for (const char* flag :
         {"--sweep", "--plot", "--jobs", "--partial-reuse", "--quota", "--hints"}) {
      if (cli.given(flag)) throw UsageError(fmt::format("{}: cache mode only", cli.describe(flag)));
    }
    if (f.policy == kBeladyPolicyName) {
      throw UsageError(fmt::format("{} belady: cache mode only (it needs the whole trace in order)",
                                   cli.describe("--policy")));
    }
  } else {
    for (const std::string& flag : engine_only_flags()) {
      if (cli.given(flag)) {
        throw UsageError(
            fmt::format("{}: engine mode only (add --mode engine)", cli.describe(flag)));
      }
    }
  }
  if (f.hints != "off" && f.hints != "online") {
    throw UsageError(fmt::format("{}: unknown value '{}' (known: off, online)",
                                 cli.describe("--hints"), f.hints));
  }
  check_tier_flags(cli, engine);
  if (f.mode != "engine" && cli.given("--metrics-listen")) {
    throw UsageError(
        fmt::format("{}: engine mode only (add --mode engine)", cli.describe("--metrics-listen")));
  }
  if (cli.given("--metrics-linger") && !cli.given("--metrics-listen")) {
    throw UsageError(fmt::format("{}: needs --metrics-listen", cli.describe("--metrics-linger")));
  }
  if (f.mode == "cluster" && cli.given("--mrc")) {
    throw UsageError(fmt::format("{}: cache and engine mode only", cli.describe("--mrc")));
  }
  const std::vector<std::string> policies = split_list(f.policy);
  if (cli.given("--quota") &&
      std::find(policies.begin(), policies.end(), kBeladyPolicyName) != policies.end()) {
    throw UsageError(fmt::format("{}: not with --policy belady (the offline bound is one cache)",
                                 cli.describe("--quota")));
  }
  if (host_tier_given(cli) &&
      std::find(policies.begin(), policies.end(), kBeladyPolicyName) != policies.end()) {
    throw UsageError(fmt::format("{}: belady is not for a host tier (it bounds one cache)",
                                 cli.describe("--policy")));
  }
  std::vector<std::string> budgets;
  for (std::string_view flag : kBudgetFlags) {
    if (cli.given(flag)) budgets.push_back(cli.describe(flag));
  }
  if (budgets.size() > 1) {
    throw UsageError(fmt::format("{}: give one budget, not {} at once", budgets[0],
                                 fmt::join(budgets, " and ")));
  }
  check_events_flags(cli, f.events);
  if (cli.given("--sweep") && cli.given("--kv-events")) {
    throw UsageError(fmt::format("{}: one replay at a time publishes, not a --sweep",
                                 cli.describe("--kv-events")));
  }
  if (!cli.given("--sweep")) {
    if (f.policy.find(',') != std::string::npos) {
      throw UsageError(fmt::format("{}: several policies need --sweep", cli.describe("--policy")));
    }
    if (cli.given("--plot"))
      throw UsageError(fmt::format("{}: needs --sweep", cli.describe("--plot")));
  } else {
    check_output_path(cli, "--plot", f.plot);  // written after every run of the sweep
  }
  const std::string several_runs = cli.given("--sweep")        ? "--sweep"
                                   : cli.given("--sweep-host") ? "--sweep-host"
                                                               : "";
  std::string remote_refusal;
  if (f.mode == "cluster") {
    remote_refusal = "not in cluster mode (its workers have no remote tier yet)";
  } else if (cli.given("--no-cache")) {
    remote_refusal = "not with --no-cache (a run with caching off reads no cache)";
  } else if (!several_runs.empty()) {
    remote_refusal = fmt::format(
        "not with {} (each run would read the pages the previous one wrote)", several_runs);
  }
  check_remote_flags(cli, remote_refusal);
  std::string disk_refusal;
  if (f.mode == "cluster") {
    disk_refusal = "not in cluster mode (its workers have no disk tier yet)";
  } else if (cli.given("--no-cache")) {
    disk_refusal = "not with --no-cache (a run with caching off reads no cache)";
  } else if (!several_runs.empty()) {
    disk_refusal = fmt::format("not with {} (each run would read the pages the previous one wrote)",
                               several_runs);
  }
  check_disk_flags(cli, engine, disk_refusal);
  if (!engine && cli.given("--remote-prefetch")) {
    throw UsageError(fmt::format("{}: engine mode only (cache mode queues no request to prefetch)",
                                 cli.describe("--remote-prefetch")));
  }
  if (!cli.given("--trace")) {
    for (const char* flag : {"--format", "--block-tokens"}) {
      if (cli.given(flag)) {
        throw UsageError(
            fmt::format("{}: needs --trace (the built-in trace is native)", cli.describe(flag)));
      }
    }
  }
}

// Everything the flags decide before the trace is read.
struct ReplayPlan {
  KvLayout layout;
  std::vector<std::string> policies;
  std::vector<uint64_t> capacities;    // pages; one unless --sweep
  std::string budget_flag;             // the flag the budget came from, for errors
  std::vector<Watermarks> watermarks;  // one per capacity
  std::vector<NamespaceQuota> quotas;  // --quota
  std::vector<HostTierReplayConfig>
      hosts;  // host tiers (capacity 0: none); one unless --sweep-host
  ReadOptions read;
  std::optional<EngineReplayConfig> engine;    // engine and cluster mode
  std::optional<ClusterReplayConfig> cluster;  // cluster mode
};

KvLayout layout_of(const CommandLine& cli, const ReplayFlags& f) {
  try {
    return KvLayout::preset(f.model, static_cast<uint32_t>(f.page_tokens));
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{}: {}", cli.describe("--model"), e.what()));
  }
}

// The policies of --policy. Commas separate policies and also a policy's parameters, so an item
// that is only key=value (no ':', has '=') continues the policy before it:
// "lru,reuse:limit=1,prior=8" is lru and reuse:limit=1,prior=8.
std::vector<std::string> policies_of(const CommandLine& cli, const ReplayFlags& f) {
  std::vector<std::string> policies;
  for (const std::string& item : split_list(f.policy)) {
    const bool parameter =
        item.find('=') != std::string::npos && item.find(':') == std::string::npos;
    if (parameter && !policies.empty() && policies.back().find(':') != std::string::npos) {
      policies.back() += "," + item;
    } else {
      policies.push_back(item);
    }
  }
  for (const std::string& policy : policies) {
    if (policy == kBeladyPolicyName) continue;  // built from the trace, once it is read
    try {
      make_policy(policy);
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}: {}", cli.describe("--policy"), e.what()));
    }
  }
  return policies;
}

ReadOptions read_options_of(const CommandLine& cli, const ReplayFlags& f) {
  ReadOptions read;
  read.skip_bad = f.skip_bad;
  if (cli.given("--format")) {
    read.format = parse_format_name(f.format);
    if (!read.format) {
      throw UsageError(fmt::format("{}: unknown format '{}' (known: {})", cli.describe("--format"),
                                   f.format, format_names()));
    }
  }
  if (cli.given("--block-tokens")) read.block_tokens = static_cast<uint32_t>(f.block_tokens);
  return read;
}

ReplayPlan plan_replay(const CommandLine& cli, const ReplayFlags& f) {
  ReplayPlan plan;
  plan.layout = layout_of(cli, f);
  plan.policies = policies_of(cli, f);
  plan.read = read_options_of(cli, f);
  for (std::string_view flag : kBudgetFlags) {
    if (cli.given(flag)) plan.budget_flag = cli.describe(flag);
  }
  if (cli.given("--sweep")) {
    for (const std::string& value : split_list(f.sweep)) {
      plan.capacities.push_back(pages_for_capacity(value, plan.layout, plan.budget_flag));
    }
  } else if (cli.given("--pool-bytes") || cli.given("--cache-bytes")) {
    const uint64_t bytes = cli.given("--pool-bytes") ? f.pool_bytes : f.cache_bytes;
    plan.capacities.push_back(pages_for_bytes(bytes, plan.layout, plan.budget_flag));
  } else {
    if (plan.budget_flag.empty()) plan.budget_flag = "--capacity-tokens";
    plan.capacities.push_back(pages_for_tokens(f.capacity_tokens, plan.layout, plan.budget_flag));
  }
  plan.hosts = host_tiers_of(cli, f.tiers, plan.layout);
  plan.quotas = parse_quotas(f.quotas, cli.describe("--quota"));
  for (uint64_t pages : plan.capacities) {  // the checks against each budget, before any replay
    try {
      const uint64_t bytes_per_page = plan.layout.bytes_per_page();
      quota_pages(plan.quotas, CacheBudget({pages * bytes_per_page, 1.0, 1.0}, bytes_per_page),
                  bytes_per_page);
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}: {}", cli.describe("--quota"), e.what()));
    }
  }
  const bool engine = f.mode != "cache";
  for (uint64_t pages : plan.capacities) {
    plan.watermarks.push_back(resolve_watermarks(
        f.high_watermark, f.low_watermark, engine ? kEngineWatermarks : kCacheWatermarks, pages,
        plan.layout.bytes_per_page(), cli.describe("--high-watermark"),
        cli.describe("--low-watermark")));
  }
  if (engine) {
    plan.engine = engine_config(f.engine, plan.layout, f.model, plan.policies[0],
                                EnginePool{plan.capacities[0], plan.budget_flag});
    plan.engine->high_watermark = plan.watermarks[0].high;
    plan.engine->low_watermark = plan.watermarks[0].low;
    plan.engine->host = plan.hosts[0];
    if (f.mode == "cluster") plan.cluster = cluster_config(cli, f.cluster, *plan.engine);
  }
  return plan;
}

Trace load_trace(const CommandLine& cli, const ReplayFlags& f, const ReadOptions& read) {
  if (!cli.given("--trace")) {
    const Activity activity("reading the built-in trace");
    return generate_trace(GenConfig{}, kDefaultTraceName);
  }
  const Activity activity(fmt::format("reading the trace {}", f.trace));
  return read_trace(f.trace, read);
}

// The trees of the cells that run at once, faulted in ahead of use by a thread of their own
// (kv_store/heap.h), when a core is left for that thread: with a cell on every core it would only
// take turns with them.
void reserve_tree_memory(const Trace& trace, const std::vector<CacheReplayConfig>& cells,
                         const std::vector<std::size_t>& order, unsigned jobs) {
  const unsigned at_once = std::max(jobs, 1u);
  if (at_once >= default_jobs()) return;
  uint64_t bytes = 0;  // the largest `at_once` cells: the first ones to run
  for (std::size_t k = 0; k < order.size() && k < at_once; ++k) {
    bytes += tree_bytes_bound(trace, cells[order[k]]);
  }
  heap::reserve(static_cast<std::size_t>(std::min<uint64_t>(bytes, SIZE_MAX)));
}

std::vector<ReplayResult> run_cache_mode(const Trace& trace, const ReplayFlags& f,
                                         const ReplayPlan& plan, ProgressBar& progress,
                                         const ReplayHooks& hooks, remote::RemoteTier* remote,
                                         disk::DiskTier* disk) {
  std::shared_ptr<const NextUseIndex> belady_index;
  if (std::find(plan.policies.begin(), plan.policies.end(), kBeladyPolicyName) !=
      plan.policies.end()) {
    const Activity activity("building the Belady bound's index of next uses");
    belady_index = std::make_shared<const NextUseIndex>(trace, plan.layout.page_tokens);
  }
  std::vector<CacheReplayConfig> cells;
  for (const std::string& policy : plan.policies) {
    for (const HostTierReplayConfig& host : plan.hosts) {
      for (std::size_t c = 0; c < plan.capacities.size(); ++c) {
        CacheReplayConfig& config = cells.emplace_back();
        config.host = host;
        config.layout = plan.layout;
        config.model = f.model;
        config.capacity_pages = plan.capacities[c];
        config.high_watermark = plan.watermarks[c].high;
        config.low_watermark = plan.watermarks[c].low;
        config.policy = policy;
        config.partial_reuse = f.partial_reuse;
        config.quotas = plan.quotas;
        // Hints steer an online policy; the offline bound stays the bound.
        config.hints_online = f.hints == "online" && policy != kBeladyPolicyName;
        if (policy == kBeladyPolicyName) use_belady(config, belady_index);
        config.remote = remote;  // one cell only: --remote is refused with --sweep
        config.disk = disk;      // likewise
        if (remote != nullptr && f.remote.wait_writes) {
          config.before_request = [remote, then = config.before_request](std::size_t request) {
            remote->drain();
            if (then) then(request);
          };
        }
        config.events = hooks.events;  // one cell only (check_flags)
        config.at_end = hooks.at_end;
        config.miss_ratio_curve = f.mrc;
      }
    }
  }
  std::vector<ReplayResult> results(cells.size());
  const unsigned jobs = static_cast<unsigned>(std::min<uint64_t>(f.jobs, cells.size()));
  std::vector<uint64_t> work;
  for (const CacheReplayConfig& cell : cells) work.push_back(expected_cell_work(trace, cell));
  const std::vector<std::size_t> order = longest_first(work);
  reserve_tree_memory(trace, cells, order, jobs);
  if (jobs <= 1) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      cells[i].progress = std::ref(progress);
      const Activity activity(fmt::format("replaying {} in cache mode (policy {}, {} pages)",
                                          trace.source, cells[i].policy, cells[i].capacity_pages));
      results[i] = replay_cache(trace, cells[i]);
      hooks.report(results[i]);
    }
    return results;
  }
  // One bar for all cells: the requests every cell has done, under a lock.
  std::mutex progress_lock;
  std::vector<std::size_t> done(cells.size(), 0);
  std::size_t done_total = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    cells[i].progress = [&, i](std::size_t cell_done, std::size_t total) {
      const std::lock_guard lock(progress_lock);
      done_total += cell_done - done[i];
      done[i] = cell_done;
      progress(done_total, total * cells.size());
    };
  }
  const Activity activity(fmt::format("replaying {} in cache mode ({} replays, {} at a time)",
                                      trace.source, cells.size(), jobs));
  run_cells(order, jobs, [&](std::size_t i) { results[i] = replay_cache(trace, cells[i]); });
  for (ReplayResult& result : results) hooks.report(result);
  return results;
}

// The sweep's SVG plot; false (and a message) when it cannot be written.
bool write_plot(const std::vector<ReplayResult>& results, const Trace& trace,
                const CommandLine& cli, const ReplayFlags& f, std::ostream& err) {
  std::vector<PlotSeries> series;
  for (const ReplayResult& r : results) {
    // One line per policy and host capacity; x is the device capacity.
    const std::string name =
        r.host.enabled ? fmt::format("{} + host {}", r.policy, host_capacity_text(r)) : r.policy;
    if (series.empty() || series.back().name != name) series.push_back({name, {}});
    series.back().points.push_back({static_cast<double>(r.capacity_tokens()), r.hit_rate()});
  }
  const std::string svg = render_sweep_svg(
      series, "Prefix cache hit rate vs. capacity",
      fmt::format("{} ({}), {} requests, {} tokens/page, cache mode",
                  cli.given("--trace") ? std::filesystem::path(trace.source).filename().string()
                                       : std::string("built-in default trace"),
                  format_name(trace.format), group_digits(trace.requests.size()), f.page_tokens));
  std::ofstream file(f.plot, std::ios::trunc);
  file << svg;
  file.close();
  if (!file) err << fmt::format("radixkv replay: error: cannot write the plot to '{}'\n", f.plot);
  return static_cast<bool>(file);
}

int report_cache_mode(const std::vector<ReplayResult>& results, const Trace& trace,
                      const CommandLine& cli, const ReplayFlags& f, std::ostream& out,
                      std::ostream& err) {
  bool ok =
      std::all_of(results.begin(), results.end(), [](const ReplayResult& r) { return r.ok(); });
  if (!cli.given("--sweep")) {
    out << (f.json ? format_report_json(results[0]) + "\n" : format_report_text(results[0]));
  } else {
    ok = write_plot(results, trace, cli, f, err) && ok;
    out << (f.json ? format_sweep_json(results) + "\n"
                   : format_sweep_text(results) + fmt::format("plot: {}\n", f.plot));
  }
  for (const ReplayResult& r : results) {
    if (r.ok()) continue;
    err << fmt::format("radixkv replay: error: {} pages leaked{}{} (policy {}, {} pages)\n",
                       r.pages_leaked, r.accounting_error.empty() ? "" : "; ", r.accounting_error,
                       r.policy, r.capacity_pages);
  }
  return ok ? kExitOk : kExitFailure;
}

}  // namespace

int run_replay(std::span<const std::string> argv, std::ostream& out, std::ostream& err,
               const CliEnvironment& env) {
  ReplayFlags f;
  CommandLine cli("replay", kDescription);
  declare_replay_flags(cli, f);
  cli.footer("eviction policies (--policy NAME, or NAME:key=value,... to set parameters):\n" +
             policy_help());
  if (!cli.parse(argv, out)) return kExitOk;  // --help
  if (cli.given("--config")) apply_config(cli, f);
  // Everything about the command line is checked before the trace is read.
  check_flags(cli, f);
  const ReplayPlan plan = plan_replay(cli, f);
  // Its sockets too: a bad endpoint is a bad command line.
  std::optional<EventsOutput> events;
  if (cli.given("--kv-events")) events.emplace(cli, f.events, plan.layout.page_tokens, err);
  const std::unique_ptr<remote::RemoteTier> remote =
      make_remote_tier(cli, f.remote, plan.layout, f.model, err);
  const std::unique_ptr<disk::DiskTier> disk = make_disk_tier(cli, f.disk, plan.layout, f.model);
  std::optional<MetricsEndpoint> endpoint;
  if (cli.given("--metrics-listen")) {
    try {
      endpoint.emplace(f.metrics_listen);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    err << fmt::format("radixkv replay: metrics at http://{}:{}/metrics\n",
                       endpoint->host().find(':') == std::string::npos
                           ? endpoint->host()
                           : fmt::format("[{}]", endpoint->host()),
                       endpoint->port());
  }

  const auto load_start = std::chrono::steady_clock::now();
  const Trace trace = load_trace(cli, f, plan.read);
  const double load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  if (trace.requests.empty()) throw TraceError(trace.source, 0, "the trace holds no request");
  if (!f.json) {
    out << fmt::format("trace: {} ({}), {} requests, {} input tokens, read in {:.3f} s\n",
                       trace.source, format_name(trace.format), group_digits(trace.requests.size()),
                       group_digits(trace.input_tokens()), load_seconds);
    out.flush();
  }

  ProgressBar progress(err, env.interactive && !f.no_progress);
  bool pages_dumped = true;
  const ReplayHooks hooks{events ? events->events() : nullptr,
                          [&](const RadixTree& tree) {
                            if (cli.given("--dump-pages"))
                              pages_dumped = dump_pages(tree, f.events.dump_pages, err);
                          },
                          [&](ReplayResult& result) {
                            if (events) result.kv_events_published = events->published();
                          }};
  int status = kExitOk;
  if (f.mode == "cluster") {
    ClusterReplayConfig config = *plan.cluster;
    config.engine.progress = std::ref(progress);
    const Activity activity(fmt::format("replaying {} in cluster mode", trace.source));
    status = run_cluster_replay(trace, config, EnginePool{plan.capacities[0], plan.budget_flag},
                                f.json, out, err);
  } else if (plan.engine) {
    EngineReplayConfig config = *plan.engine;
    config.progress = std::ref(progress);
    config.events = hooks.events;
    config.at_end = hooks.at_end;
    config.remote = remote.get();
    config.disk = disk.get();
    config.disk_read_gbps = f.disk.read_gbps;
    config.disk_write_gbps = f.disk.write_gbps;
    if (remote && f.remote.wait_writes) config.before_step = [&remote] { remote->drain(); };
    config.miss_ratio_curve = f.mrc || endpoint;
    std::optional<MetricsPublisher> publisher;
    if (endpoint) config.on_step = std::ref(publisher.emplace(*endpoint));
    const Activity activity(fmt::format("replaying {} in engine mode", trace.source));
    status = run_engine_replay(trace, config, EnginePool{plan.capacities[0], plan.budget_flag},
                               f.json, out, err, hooks.report);
  } else {
    std::vector<ReplayResult> results =
        run_cache_mode(trace, f, plan, progress, hooks, remote.get(), disk.get());
    status = report_cache_mode(results, trace, cli, f, out, err);
  }
  out.flush();  // the report is out before the linger
  if (endpoint && f.metrics_linger > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(f.metrics_linger));
  }
  const bool events_ok = !events || events->close(err);
  const bool remote_ok = !remote || check_remote_answered(*remote, err);
  return status == kExitOk && !(pages_dumped && events_ok && remote_ok) ? kExitFailure : status;
}

}  // namespace radixkv::tools
