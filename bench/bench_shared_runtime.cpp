// BM_SharedRuntime/shards:<S>/threads:<T>: the thread-safe front (runtime/shared_runtime.h) under
// T scheduler threads, locked (S = 1: one mutex) against sharded by namespace (S = 4).
// Each iteration is one request: admit, prefill committed in one step, finish. Requests come from
// 16 namespaces, each with 4 system prompts of 1,024 tokens, then 64 tokens of their own, so most
// of every prompt is a cache hit and the time is the cache's own bookkeeping under its lock.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "runtime/shared_runtime.h"

namespace radixkv::bench {

namespace {

constexpr uint32_t kNamespaces = 16;
constexpr uint32_t kSystemTokens = 1024;
constexpr uint32_t kOwnTokens = 64;

std::unique_ptr<SharedRuntime> g_cache;

void BM_SharedRuntime(benchmark::State& state) {
  const auto shards = static_cast<uint32_t>(state.range(0));
  if (state.thread_index() == 0) {
    // 8,192 pages of 16 tokens: room for every system prompt and a few thousand private tails.
    g_cache = std::make_unique<SharedRuntime>(KvLayout{1, 1, 1, 2, 16}, 8192, shards);
  }
  std::mt19937_64 rng(state.thread_index() + 1);
  std::vector<TokenId> prompt;
  uint64_t reused = 0, requests = 0;
  for (auto _ : state) {
    const Namespace ns = rng() % kNamespaces;
    prompt.assign(kSystemTokens, static_cast<TokenId>(ns * 4 + rng() % 4));
    for (uint32_t i = 0; i < kOwnTokens; ++i) prompt.push_back(static_cast<TokenId>(rng()));
    const SharedAdmit admitted = g_cache->admit({requests, ns, prompt, kDefaultPriority});
    if (!admitted.ok()) {
      state.SkipWithError("admit refused: the pool is too small for the threads");
      break;
    }
    g_cache->commit(admitted.handle, static_cast<uint32_t>(prompt.size()));
    g_cache->finish(admitted.handle);
    reused += admitted.reused_tokens;
    ++requests;
  }
  state.SetItemsProcessed(static_cast<int64_t>(requests));
  state.counters["reused_fraction"] = benchmark::Counter(
      static_cast<double>(reused) / static_cast<double>((kSystemTokens + kOwnTokens) * requests),
      benchmark::Counter::kAvgThreads);
  if (state.thread_index() == 0) state.SetLabel(shards == 1 ? "locked" : "sharded");
}

BENCHMARK(BM_SharedRuntime)
    ->Name("BM_SharedRuntime")
    ->ArgName("shards")
    ->Arg(1)
    ->Arg(4)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

}  // namespace

}  // namespace radixkv::bench
