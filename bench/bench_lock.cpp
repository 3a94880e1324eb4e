// BM_LockUnlock/<impl>/tree:<T>/hit:<L>: pinning the cached prefix of a request and unpinning it
// (what admit and finish do), for a boundary query of hit L in the 10^6-token world.
//   radix:     RadixTree::lock + unlock of the node where the match ends: one step per node on
//              the path, whatever the number of pages.
//   blockhash: vLLM's touch() + free(): a refcount per page, and the free queue unlink/append.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "bench/match_world.h"
#include "bench/suite.h"

namespace radixkv::bench {

namespace {

constexpr uint64_t kLockTreeTokens = 1'000'000;

void bm_lock_radix(benchmark::State& state, uint32_t hit) {
  MatchWorld& world = match_world(kLockTreeTokens);
  const Query& query = world.workload.find(HitKind::kBoundary, hit)->queries.front();
  RadixNode* node = world.tree.match(0, query.tokens).node;
  for (auto _ : state) {
    world.tree.lock(node);
    world.tree.unlock(node);
  }
  uint32_t depth = 0;
  for (const RadixNode* x = node; !x->is_root(); x = x->parent()) ++depth;
  state.counters["path_nodes"] = depth;
  state.SetItemsProcessed(state.iterations());
}

void bm_lock_blockhash(benchmark::State& state, uint32_t hit) {
  MatchWorld& world = match_world(kLockTreeTokens);
  const Query& query = world.workload.find(HitKind::kBoundary, hit)->queries.front();
  std::vector<PageId> pages;
  world.blocks.match(0, query.tokens, &pages);
  for (auto _ : state) {
    world.blocks.lock(pages);
    world.blocks.unlock(pages);
  }
  state.counters["pages"] = static_cast<double>(pages.size());
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

void register_lock_benchmarks() {
  if (tree_sizes().back() < kLockTreeTokens) return;
  for (uint32_t hit : {256u, 4096u, 65536u}) {
    benchmark::RegisterBenchmark(
        fmt::format("BM_LockUnlock/radix/tree:{}/hit:{}", kLockTreeTokens, hit).c_str(),
        bm_lock_radix, hit);
    benchmark::RegisterBenchmark(
        fmt::format("BM_LockUnlock/blockhash/tree:{}/hit:{}", kLockTreeTokens, hit).c_str(),
        bm_lock_blockhash, hit);
  }
}

}  // namespace radixkv::bench
