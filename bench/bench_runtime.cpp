// BM_AdmitFinish/runtime/tree:<T>/hit:<L>/metrics:<M>: one request through PrefixCacheRuntime:
// admit (match, lock, page allocation), mark its prompt computed, finish (insert of the new pages,
// unlock, release). The runtime's cache first holds the 10^6-token workload of bench_match.cpp,
// cached the same way (admit, compute, finish); the request is a boundary query of hit L followed
// by L/4 new tokens. Only the request is timed (manual time, by a steady clock read around it); the
// leaf that finish cached is erased again, untimed, so that every iteration sees the same cache.
// M is what the runtime keeps for its metrics (docs/metrics.md, "Cost"): `none` (time_calls(0)),
// `timed` (the default: one call in 8 timed), `all` (time_calls(1): every call timed) or `curve`
// (the default, and the live miss-ratio curve at its default, started before the workload is
// cached so that it was fed the workload too). Run them interleaved to read the cost of each.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <array>
#include <memory>
#include <stdexcept>
#include <string>

#include "bench/suite.h"
#include "bench/workload.h"
#include "runtime/prefix_cache_runtime.h"
#include "runtime/runtime_internals.h"

namespace radixkv::bench {

namespace {

constexpr uint64_t kRuntimeTreeTokens = 1'000'000;

struct RuntimeWorld {
  enum class Metrics { kNone, kTimed, kAll, kCurve };
  static constexpr std::array<std::pair<Metrics, const char*>, 4> kMetrics = {
      {{Metrics::kNone, "none"},
       {Metrics::kTimed, "timed"},
       {Metrics::kAll, "all"},
       {Metrics::kCurve, "curve"}}};

  explicit RuntimeWorld(Metrics metrics)
      : workload(make_workload(kRuntimeTreeTokens)),
        // Twice what the workload can cache, so the watermarks never evict during the benchmark.
        pool(KvLayout{1, 1, 1, 2, workload.page_tokens},
             static_cast<uint32_t>(2 * (workload.estimated_unique_tokens / workload.page_tokens +
                                        workload.conversations.size()) +
                                   1024)),
        runtime(pool) {
    if (metrics == Metrics::kNone) runtime.time_calls(0);
    if (metrics == Metrics::kAll) runtime.time_calls(1);
    if (metrics == Metrics::kCurve) runtime.start_miss_ratio_curve();
    for (std::size_t i = 0; i < workload.stored.size(); ++i) {
      run_request(workload.stored_tokens(i));
    }
  }

  // Admit, compute the whole prompt, finish. Returns the tokens reused from the cache.
  uint32_t run_request(std::span<const TokenId> prompt) {
    const AdmitResult admitted = runtime.admit(Request{next_id++, 0, prompt, kDefaultPriority});
    if (!admitted.ok()) {
      throw std::logic_error(
          fmt::format("RuntimeWorld: admit refused: {}", to_string(admitted.status)));
    }
    runtime.mark_computed(admitted.seq, static_cast<uint32_t>(prompt.size()));
    runtime.finish(admitted.seq);
    return admitted.reused_tokens;
  }

  Workload workload;
  PagePool pool;
  PrefixCacheRuntime runtime;
  uint64_t next_id = 0;
};

RuntimeWorld& runtime_world(RuntimeWorld::Metrics metrics) {
  static std::array<std::unique_ptr<RuntimeWorld>, RuntimeWorld::kMetrics.size()> worlds;
  auto& world = worlds[static_cast<std::size_t>(metrics)];
  if (!world) world = std::make_unique<RuntimeWorld>(metrics);
  return *world;
}

void bm_admit_finish(benchmark::State& state, uint32_t hit, RuntimeWorld::Metrics metrics) {
  RuntimeWorld& world = runtime_world(metrics);
  const Query& query = world.workload.find(HitKind::kBoundary, hit)->queries.front();
  RadixTree& tree = detail::RuntimeInternals::tree(world.runtime);
  uint64_t reused = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    reused += world.run_request(query.tokens);
    state.SetIterationTime(seconds_since(start));
    tree.erase_leaf(tree.match(0, query.tokens).node);
  }
  if (reused != uint64_t{hit} * static_cast<uint64_t>(state.iterations())) {
    state.SkipWithError("admit reused a different prefix than the query's known hit");
  }
  state.counters["prompt_tokens"] = static_cast<double>(query.tokens.size());
  state.counters["reused_tokens"] = hit;
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

void register_runtime_benchmarks() {
  if (tree_sizes().back() < kRuntimeTreeTokens) return;
  for (uint32_t hit : {256u, 4096u, 65536u}) {
    for (const auto& [metrics, name] : RuntimeWorld::kMetrics) {
      benchmark::RegisterBenchmark(fmt::format("BM_AdmitFinish/runtime/tree:{}/hit:{}/metrics:{}",
                                               kRuntimeTreeTokens, hit, name)
                                       .c_str(),
                                   bm_admit_finish, hit, metrics)
          ->UseManualTime();
    }
  }
}

}  // namespace radixkv::bench
