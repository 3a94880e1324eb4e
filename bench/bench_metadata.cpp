// BM_Metadata/<impl>/tree:<T>: bytes of index metadata per cached token, measured on the match
// world (page tokens 16), reported as counters (the time of this "benchmark" means nothing).
//   radix:     RadixTree::metadata_bytes(): nodes, edge token arrays, page id arrays, child
//              tables and the per-page bitmap, each by mimalloc's usable size.
//   blockhash: the hash map's heap bytes (counted by the bench binary's operator new) plus its
//              per-page refcount and free-queue arrays; it keeps no tokens.
//   linear:    the heap bytes of its copies of every stored prompt.
//
// BM_Metadata/radix/leaves:<N>/policy:<P>: the same figure for a tree whose nodes are small, where
// a node's fixed size shows: N one-page leaves of 16 tokens under a shared 4-page stem, built
// with policy P (the policy's per-entry state lies in each node's block:
// eviction/eviction_entry.h).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "bench/match_world.h"
#include "bench/suite.h"
#include "eviction/eviction_policy.h"
#include "kv_store/page_pool.h"
#include "radix/radix_tree.h"

namespace radixkv::bench {

namespace {

enum class Impl { kRadix, kBlockHash, kLinear };

void bm_metadata(benchmark::State& state, uint64_t tree_tokens, Impl impl) {
  MatchWorld& world = match_world(tree_tokens);
  uint64_t bytes = 0;
  for (auto _ : state) {
    switch (impl) {
      case Impl::kRadix:
        bytes = world.tree.metadata_bytes();
        break;
      case Impl::kBlockHash:
        bytes = static_cast<uint64_t>(world.blockhash_bytes);
        break;
      case Impl::kLinear:
        bytes = static_cast<uint64_t>(world.linear_bytes);
        break;
    }
    benchmark::DoNotOptimize(bytes);
  }
  const auto cached = static_cast<double>(world.cached_tokens());
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["cached_tokens"] = cached;
  state.counters["bytes_per_token"] = static_cast<double>(bytes) / cached;
  state.counters["nodes"] = static_cast<double>(world.tree.stats().nodes);
}

void bm_metadata_leaves(benchmark::State& state, uint32_t leaves, const std::string& policy) {
  constexpr uint32_t kPageTokens = 16, kStemPages = 4;
  PagePool pool(KvLayout{1, 1, 1, 2, kPageTokens},
                2 * kStemPages + 1 + leaves);  // room for one more key
  RadixTree tree(pool, make_policy(policy));
  std::vector<TokenId> key(size_t{kStemPages + 1} * kPageTokens);
  for (uint32_t t = 0; t < kStemPages * kPageTokens; ++t) key[t] = static_cast<TokenId>(t);
  std::vector<PageId> pages;
  for (uint32_t leaf = 0; leaf < leaves; ++leaf) {
    for (uint32_t t = 0; t < kPageTokens; ++t) {
      key[kStemPages * kPageTokens + t] = static_cast<TokenId>(1'000 + leaf * kPageTokens + t);
    }
    pages.clear();
    if (!pool.allocate(kStemPages + 1, pages)) {
      state.SkipWithError("the pool is full");
      return;
    }
    tree.insert(0, key, pages);
    pool.release(pages);
  }
  uint64_t bytes = 0;
  for (auto _ : state) {
    bytes = tree.metadata_bytes();
    benchmark::DoNotOptimize(bytes);
  }
  const auto cached = static_cast<double>(tree.cached_pages() * kPageTokens);
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["cached_tokens"] = cached;
  state.counters["bytes_per_token"] = static_cast<double>(bytes) / cached;
  state.counters["nodes"] = static_cast<double>(tree.stats().nodes);
}

}  // namespace

void register_metadata_benchmarks() {
  for (const char* policy : {"lru", "gdsf", "reuse"}) {
    benchmark::RegisterBenchmark(
        fmt::format("BM_Metadata/radix/leaves:100000/policy:{}", policy).c_str(),
        bm_metadata_leaves, 100'000u, std::string(policy))
        ->Iterations(1);
  }
  for (uint64_t tree_tokens : tree_sizes()) {
    for (auto [impl, name] :
         {std::pair{Impl::kRadix, "radix"}, std::pair{Impl::kBlockHash, "blockhash"},
          std::pair{Impl::kLinear, "linear"}}) {
      benchmark::RegisterBenchmark(fmt::format("BM_Metadata/{}/tree:{}", name, tree_tokens).c_str(),
                                   bm_metadata, tree_tokens, impl)
          ->Iterations(1);
    }
  }
}

}  // namespace radixkv::bench
