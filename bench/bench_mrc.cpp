// BM_MrcAccess/keys:<K>/hit:<L>: what the live miss-ratio curve (metrics/prompt_mrc.h) with
// max_keys K (16384 is the default) costs per request: the page keys of the prompt and the SHARDS
// sampler's access, for the same request as BM_AdmitFinish/runtime/tree:1000000/hit:<L> (a boundary
// query of hit L and L/4 new tokens), so that the two compare per request. The curve first sees
// every stored prompt of that benchmark's 10^6-token workload, so its sampler is in the state a
// runtime that cached them would have (the rate lowered to the key bound where the workload passes
// it). BM_MrcKeys/hit:<L>: the page keys alone. BM_MrcAccess/keys:<K>/cycle: the stored prompts in
// turn (hits and misses mixed, the index not warm for any one prompt); items = pages.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <map>
#include <memory>
#include <vector>

#include "bench/suite.h"
#include "bench/workload.h"
#include "metrics/prompt_mrc.h"

namespace radixkv::bench {

namespace {

constexpr uint64_t kMrcTreeTokens = 1'000'000;  // BM_AdmitFinish's workload
// The runtime's default: 16,384 pages of 16 tokens (the replay's 262,144-token cache).
constexpr uint64_t kMrcCapacityPages = 16384;

metrics::ShardsConfig with_max_keys(uint32_t max_keys) {
  metrics::ShardsConfig config;
  config.max_keys = max_keys;
  return config;
}

struct MrcWorld {
  explicit MrcWorld(uint32_t max_keys)
      : workload(make_workload(kMrcTreeTokens)),
        mrc(workload.page_tokens, kMrcCapacityPages, with_max_keys(max_keys)) {
    for (std::size_t i = 0; i < workload.stored.size(); ++i) {
      mrc.access(0, workload.stored_tokens(i));
    }
  }
  Workload workload;
  metrics::PromptMrc mrc;
};

MrcWorld& mrc_world(uint32_t max_keys) {
  static std::map<uint32_t, std::unique_ptr<MrcWorld>> worlds;
  std::unique_ptr<MrcWorld>& world = worlds[max_keys];
  if (!world) world = std::make_unique<MrcWorld>(max_keys);
  return *world;
}

void set_counters(benchmark::State& state, const metrics::PromptMrc& mrc, std::size_t tokens) {
  state.counters["prompt_tokens"] = static_cast<double>(tokens);
  state.counters["rate"] = mrc.sampler().rate();
  state.counters["tracked_keys"] = mrc.sampler().tracked_keys();
}

void bm_mrc_access(benchmark::State& state, uint32_t max_keys, uint32_t hit) {
  MrcWorld& world = mrc_world(max_keys);
  const Query& query = world.workload.find(HitKind::kBoundary, hit)->queries.front();
  for (auto _ : state) world.mrc.access(0, query.tokens);
  set_counters(state, world.mrc, query.tokens.size());
  state.SetItemsProcessed(state.iterations());
}

void bm_mrc_keys(benchmark::State& state, uint32_t hit) {
  MrcWorld& world = mrc_world(metrics::ShardsConfig::kDefaultMaxKeys);
  const Query& query = world.workload.find(HitKind::kBoundary, hit)->queries.front();
  std::vector<uint64_t> keys;
  for (auto _ : state) {
    metrics::prompt_page_keys(0, query.tokens, world.workload.page_tokens, keys);
    benchmark::DoNotOptimize(keys.data());
  }
  state.counters["prompt_tokens"] = static_cast<double>(query.tokens.size());
  state.SetItemsProcessed(state.iterations());
}

void bm_mrc_cycle(benchmark::State& state, uint32_t max_keys) {
  MrcWorld& world = mrc_world(max_keys);
  std::size_t next = 0;
  uint64_t pages = 0;
  for (auto _ : state) {
    const std::span<const TokenId> prompt = world.workload.stored_tokens(next);
    world.mrc.access(0, prompt);
    pages += prompt.size() / world.workload.page_tokens;
    next = next + 1 == world.workload.stored.size() ? 0 : next + 1;
  }
  set_counters(state, world.mrc, 0);
  state.SetItemsProcessed(static_cast<int64_t>(pages));
}

}  // namespace

void register_mrc_benchmarks() {
  if (tree_sizes().back() < kMrcTreeTokens) return;
  // The default window, and one 8x smaller (rate 1/64 instead of 1/8 at this capacity).
  for (uint32_t max_keys : {metrics::ShardsConfig::kDefaultMaxKeys, 2048u}) {
    for (uint32_t hit : {256u, 4096u, 65536u}) {
      benchmark::RegisterBenchmark(
          fmt::format("BM_MrcAccess/keys:{}/hit:{}", max_keys, hit).c_str(), bm_mrc_access,
          max_keys, hit);
    }
    benchmark::RegisterBenchmark(fmt::format("BM_MrcAccess/keys:{}/cycle", max_keys).c_str(),
                                 bm_mrc_cycle, max_keys);
  }
  for (uint32_t hit : {256u, 4096u, 65536u}) {
    benchmark::RegisterBenchmark(fmt::format("BM_MrcKeys/hit:{}", hit).c_str(), bm_mrc_keys, hit);
  }
}

}  // namespace radixkv::bench
