// `radixkv replay`: flags -> trace + cache configuration -> replay(s) -> report, table, plot.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "eviction/policy_registry.h"
#include "kv_store/page_pool.h"
#include "tools/cli/args.h"
#include "tools/cli/cli.h"
#include "tools/cli/engine_cli.h"
#include "tools/replay/belady_policy.h"
#include "tools/replay/cache_replay.h"
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

std::vector<FlagSpec> replay_flags() {
  return {
      {"trace", "PATH",
       "trace file, or a folder of agentic sessions (default: the built-in trace)"},
      {"format", "NAME", "native, mooncake or agentic (default: guessed from the file)"},
      {"mode", "NAME", "cache (one request at a time, as published hit-rate curves) or engine"},
      {"page-tokens", "N", fmt::format("tokens per KV page (default {})", kDefaultPageTokens)},
      {"capacity-tokens", "N",
       fmt::format("cache capacity in tokens, e.g. 1e6 (default {})", kDefaultCapacityTokens)},
      {"cache-bytes", "SIZE", "cache capacity in bytes of KV, e.g. 40GiB (converted with --model)"},
      {"model", "PRESET",
       fmt::format("KV layout that converts tokens to bytes (default {}; known: {})", kDefaultModel,
                   fmt::join(KvLayout::preset_names(), ", "))},
      {"policy", "NAME",
       fmt::format("eviction policy (default lru; known: {}, and {}, the offline bound); "
                   "NAME:key=value sets parameters; with --sweep a comma-separated list draws "
                   "one line each",
                   fmt::join(policy_names(), ", "), kBeladyPolicyName)},
      {"sweep", "CAP,CAP,...",
       "replay at each capacity (tokens like 1e6, or bytes like 8GiB); prints a table, writes a "
       "plot"},
      {"plot", "PATH", fmt::format("where --sweep writes its SVG plot (default {})", kDefaultPlot)},
      {"json", "", "print one JSON object on stdout instead of the text report"},
      {"skip-bad", "", "skip malformed trace records (and count them) instead of stopping"},
      {"no-progress", "", "no progress bar, even on a terminal"},
      {"help", "", "show this help"},
  };
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// A capacity written as tokens (a count) or bytes (a size with a unit), in pages.
uint64_t capacity_pages(const std::string& text, std::string_view flag, bool bytes,
                        const KvLayout& layout) {
  if (bytes) {
    const uint64_t size = parse_size(text, flag);
    try {
      return PagePool::pages_for_bytes(layout, size);
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}: {}", flag, e.what()));
    }
  }
  const uint64_t tokens = parse_count(text, flag);
  const uint64_t pages = tokens / layout.page_tokens;
  if (pages == 0) {
    throw UsageError(
        fmt::format("{}: {} tokens hold no page of {} tokens", flag, tokens, layout.page_tokens));
  }
  if (pages >= kInvalidPage) {
    throw UsageError(
        fmt::format("{}: {} pages is more than 32-bit page ids can name", flag, pages));
  }
  return pages;
}

class ProgressBar {
 public:
  ProgressBar(std::ostream& err, bool enabled) : err_(err), enabled_(enabled) {}
  void operator()(std::size_t done, std::size_t total) {
    if (!enabled_ || total == 0) return;
    // Redraw at most ten times a second, and always at the end.
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(kWidth * done / total);
    err_ << fmt::format("\r  [{:=<{}}{:<{}}] {:3}%  {}/{} requests", "", filled, "",
                        kWidth - filled, 100 * done / total, done, total);
    if (done == total) err_ << "\r" << std::string(kWidth + 40, ' ') << "\r";
    err_.flush();
  }

 private:
  std::ostream& err_;
  bool enabled_;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace

int run_replay(std::span<const std::string> argv, std::ostream& out, std::ostream& err,
               const CliEnvironment& env) {
  std::vector<FlagSpec> flags = replay_flags();
  const std::vector<FlagSpec> engine = engine_flags();
  flags.insert(flags.end() - 1, engine.begin(), engine.end());  // --help stays last
  const Args args("replay", argv, flags);
  if (args.has("help")) {
    out << args.help_text(
        "radixkv replay [--trace PATH] [--format native|mooncake|agentic] [--mode cache|engine]\n"
        "                      [--page-tokens N] [--capacity-tokens N | --cache-bytes SIZE]\n"
        "                      [--model PRESET] [--policy lru] [--json] [--sweep CAP,CAP,...]",
        "Replays a trace against the radix prefix cache and reports the token-weighted hit rate,\n"
        "tokens and bytes reused, evictions, peak cached bytes, pages leaked (always 0 unless a\n"
        "bug), and the speed of the cache. With no --trace it replays the built-in multi-turn\n"
        "trace. Cache mode follows docs/design.md exactly: one request at a time, only prompts\n"
        "cached, page-by-page eviction from the least recently used unprotected leaf.\n"
        "Engine mode (docs/engine.md) serves the trace with the reference batch scheduler on one\n"
        "KV pool (--pool-bytes) and a simulated clock, and reports time to first token and\n"
        "throughput with the cache and without it, side by side.");
    out << "\neviction policies (--policy NAME, or NAME:key=value,... to set parameters):\n"
        << policy_help();
    return kExitOk;
  }

  // Everything about the command line is checked before the trace is read.
  const std::string mode = args.get_or("mode", "cache");
  if (mode == "engine") {
    for (const char* flag : {"sweep", "plot"}) {
      if (args.has(flag)) throw UsageError(fmt::format("--{}: cache mode only", flag));
    }
    if (args.get_or("policy", "lru") == kBeladyPolicyName) {
      throw UsageError("--policy belady: cache mode only (it needs the whole trace in order)");
    }
    if (args.has("pool-bytes") && (args.has("cache-bytes") || args.has("capacity-tokens"))) {
      throw UsageError("--pool-bytes: give one of --pool-bytes, --cache-bytes, --capacity-tokens");
    }
  } else {
    reject_engine_flags(args);
  }
  if (mode != "cache" && mode != "engine")
    throw UsageError(fmt::format("--mode: unknown mode '{}' (known: cache, engine)", mode));
  std::optional<TraceFormat> format;
  if (auto f = args.get("format")) {
    format = parse_format_name(*f);
    if (!format)
      throw UsageError(
          fmt::format("--format: unknown format '{}' (known: native, mooncake, agentic)", *f));
    if (!args.has("trace"))
      throw UsageError("--format: needs --trace (the built-in trace is native)");
  }
  const uint64_t page_tokens = args.has("page-tokens")
                                   ? parse_count(*args.get("page-tokens"), "--page-tokens")
                                   : kDefaultPageTokens;
  if (page_tokens < 1 || page_tokens > kMaxPageTokens) {
    throw UsageError(
        fmt::format("--page-tokens: {} is outside [1, {}]", page_tokens, kMaxPageTokens));
  }
  const std::string model = args.get_or("model", kDefaultModel);
  KvLayout layout;
  try {
    layout = KvLayout::preset(model, static_cast<uint32_t>(page_tokens));
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("--model: {}", e.what()));
  }
  const std::vector<std::string> policies = split_list(args.get_or("policy", "lru"));
  for (const std::string& policy : policies) {
    if (policy == kBeladyPolicyName) continue;  // built from the trace, once it is read
    try {
      make_policy(policy);
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("--policy: {}", e.what()));
    }
  }
  if (args.has("capacity-tokens") && args.has("cache-bytes")) {
    throw UsageError("--capacity-tokens and --cache-bytes: give one or the other, not both");
  }
  std::vector<uint64_t> capacities;
  if (auto sweep = args.get("sweep")) {
    if (args.has("capacity-tokens") || args.has("cache-bytes")) {
      throw UsageError("--sweep: replaces --capacity-tokens and --cache-bytes; give only --sweep");
    }
    for (const std::string& value : split_list(*sweep)) {
      capacities.push_back(capacity_pages(value, "--sweep", has_byte_unit(value), layout));
    }
  } else {
    if (policies.size() > 1) throw UsageError("--policy: several policies need --sweep");
    if (args.has("plot")) throw UsageError("--plot: needs --sweep");
    if (auto v = args.get("pool-bytes")) {
      capacities.push_back(capacity_pages(*v, "--pool-bytes", true, layout));
    } else if (auto v = args.get("cache-bytes")) {
      capacities.push_back(capacity_pages(*v, "--cache-bytes", true, layout));
    } else {
      capacities.push_back(
          capacity_pages(args.get_or("capacity-tokens", std::to_string(kDefaultCapacityTokens)),
                         "--capacity-tokens", false, layout));
    }
  }
  const bool json = args.has("json");
  std::optional<EngineReplayConfig> engine_replay;
  const EnginePool pool{capacities.front(), args.has("pool-bytes")    ? "--pool-bytes"
                                            : args.has("cache-bytes") ? "--cache-bytes"
                                                                      : "--capacity-tokens"};
  if (mode == "engine") engine_replay = engine_config(args, layout, model, policies[0], pool);

  const auto load_start = std::chrono::steady_clock::now();
  Trace trace;
  if (auto path = args.get("trace")) {
    trace = read_trace(*path, ReadOptions{format, args.has("skip-bad")});
  } else {
    trace = parse_native(generate_native(GenConfig{}), kDefaultTraceName);
  }
  const double load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  if (trace.requests.empty()) {
    throw TraceError(trace.source, 0, "the trace holds no request");
  }
  if (!json) {
    out << fmt::format("trace: {} ({}), {} requests, {} input tokens, read in {:.3f} s\n",
                       trace.source, format_name(trace.format), group_digits(trace.requests.size()),
                       group_digits(trace.input_tokens()), load_seconds);
    out.flush();
  }

  std::shared_ptr<const NextUseIndex> belady_index;
  if (std::find(policies.begin(), policies.end(), kBeladyPolicyName) != policies.end()) {
    belady_index = std::make_shared<const NextUseIndex>(trace, layout.page_tokens);
  }

  ProgressBar progress(err, env.interactive && !args.has("no-progress"));
  if (engine_replay) {
    engine_replay->progress = std::ref(progress);
    return run_engine_replay(trace, *engine_replay, pool, json, out, err);
  }
  std::vector<ReplayResult> results;
  for (const std::string& policy : policies) {
    for (uint64_t pages : capacities) {
      CacheReplayConfig config;
      config.layout = layout;
      config.model = model;
      config.capacity_pages = pages;
      config.policy = policy;
      if (policy == kBeladyPolicyName) use_belady(config, belady_index);
      config.progress = std::ref(progress);
      results.push_back(replay_cache(trace, config));
    }
  }

  bool ok = true;
  for (const ReplayResult& r : results) ok = ok && r.ok();
  if (!args.has("sweep")) {
    out << (json ? format_report_json(results[0]) + "\n" : format_report_text(results[0]));
  } else {
    std::vector<PlotSeries> series;
    for (const ReplayResult& r : results) {
      if (series.empty() || series.back().name != r.policy) series.push_back({r.policy, {}});
      series.back().points.push_back({static_cast<double>(r.capacity_tokens()), r.hit_rate()});
    }
    const std::string plot_path = args.get_or("plot", kDefaultPlot);
    const std::string svg = render_sweep_svg(
        series, "Prefix cache hit rate vs. capacity",
        fmt::format("{} ({}), {} requests, {} tokens/page, cache mode",
                    args.has("trace") ? std::filesystem::path(trace.source).filename().string()
                                      : std::string("built-in default trace"),
                    format_name(trace.format), group_digits(trace.requests.size()), page_tokens));
    std::ofstream file(plot_path, std::ios::trunc);
    file << svg;
    file.close();
    if (!file) {
      err << fmt::format("radixkv replay: error: cannot write the plot to '{}'\n", plot_path);
      ok = false;
    }
    if (json) {
      out << format_sweep_json(results) << "\n";
    } else {
      out << format_sweep_text(results) << fmt::format("plot: {}\n", plot_path);
    }
  }
  if (!ok) {
    for (const ReplayResult& r : results) {
      if (!r.ok()) {
        err << fmt::format("radixkv replay: error: {} pages leaked{}{} (policy {}, {} pages)\n",
                           r.pages_leaked, r.accounting_error.empty() ? "" : "; ",
                           r.accounting_error, r.policy, r.capacity_pages);
      }
    }
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace radixkv::tools
