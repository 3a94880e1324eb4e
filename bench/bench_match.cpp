// BM_Match/<impl>/<kind>/tree:<T>/hit:<L>: the longest cached prefix of a query whose hit is
// exactly L tokens, in a tree of about T cached tokens; items = hit tokens, so items_per_second is
// tokens matched per second. allocs_per_match counts operator new calls in the timed loop plus,
// for the radix tree, its own mimalloc allocations (TreeStats::heap_allocations).
//
// impl:  radix        RadixTree::peek with page ids: the pure lookup (no touch, no split)
//        radix_match  RadixTree::match with page ids: lookup + LRU touch of the path (boundary
//                     only: inside an edge the first call splits, which changes the tree)
//        blockhash    chained xxHash64 per page + hash map, with page ids
//        linear       scan of every stored prompt
//        memcmp       the floor: memcmp of the query against the one stored prompt sharing its
//                     prefix, no index at all
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "bench/alloc_counter.h"
#include "bench/match_world.h"
#include "bench/suite.h"

namespace radixkv::bench {

namespace {

enum class Impl { kRadix, kRadixMatch, kBlockHash, kLinear, kMemcmp };

const char* impl_name(Impl impl) {
  switch (impl) {
    case Impl::kRadix:
      return "radix";
    case Impl::kRadixMatch:
      return "radix_match";
    case Impl::kBlockHash:
      return "blockhash";
    case Impl::kLinear:
      return "linear";
    case Impl::kMemcmp:
      return "memcmp";
  }
  return "?";
}

uint32_t match_once(MatchWorld& world, Impl impl, const Query& query, std::vector<PageId>& pages) {
  switch (impl) {
    case Impl::kRadix:
      return world.tree.peek(0, query.tokens, &pages);
    case Impl::kRadixMatch:
      return world.tree.match(0, query.tokens, &pages).tokens;
    case Impl::kBlockHash:
      return world.blocks.match(0, query.tokens, &pages);
    case Impl::kLinear:
      return world.linear.match(query.tokens).tokens;
    case Impl::kMemcmp: {
      const std::span<const TokenId> stored = world.workload.stored_tokens(query.stored);
      const std::size_t n = std::min(stored.size(), query.tokens.size());
      const int order = std::memcmp(query.tokens.data(), stored.data(), n * sizeof(TokenId));
      benchmark::DoNotOptimize(order);
      return query.hit;
    }
  }
  return 0;
}

void bm_match(benchmark::State& state, uint64_t tree_tokens, HitKind kind, uint32_t hit,
              Impl impl) {
  MatchWorld& world = match_world(tree_tokens);
  const std::vector<Query>& queries = world.workload.find(kind, hit)->queries;
  std::vector<PageId> pages;
  pages.reserve(world.workload.max_stored_tokens / world.tree.page_tokens() + 1);
  uint64_t hit_tokens = 0;
  std::size_t next = 0;
  const uint64_t calls_before = alloc_counts().calls;
  const uint64_t tree_before = world.tree.stats().heap_allocations;
  for (auto _ : state) {
    const Query& query = queries[next];
    next = next + 1 == queries.size() ? 0 : next + 1;
    pages.clear();
    const uint32_t got = match_once(world, impl, query, pages);
    benchmark::DoNotOptimize(got);
    benchmark::DoNotOptimize(pages.data());
    hit_tokens += got;
  }
  const uint64_t allocs =
      (alloc_counts().calls - calls_before) + (world.tree.stats().heap_allocations - tree_before);
  if (hit_tokens != uint64_t{hit} * state.iterations()) {
    state.SkipWithError("an index reported a different hit than the query's known hit");
  }
  state.SetItemsProcessed(static_cast<int64_t>(hit_tokens));
  state.counters["allocs_per_match"] =
      benchmark::Counter(static_cast<double>(allocs), benchmark::Counter::kAvgIterations);
  state.counters["tree_tokens"] = static_cast<double>(world.cached_tokens());
  state.counters["queries"] = static_cast<double>(queries.size());
}

}  // namespace

void register_match_benchmarks() {
  for (uint64_t tree_tokens : tree_sizes()) {
    for (uint32_t hit : hit_lengths_for(tree_tokens)) {
      for (HitKind kind : {HitKind::kBoundary, HitKind::kInside}) {
        for (Impl impl :
             {Impl::kRadix, Impl::kRadixMatch, Impl::kBlockHash, Impl::kLinear, Impl::kMemcmp}) {
          if (impl == Impl::kRadixMatch && kind == HitKind::kInside) continue;
          const std::string name = fmt::format("BM_Match/{}/{}/tree:{}/hit:{}", impl_name(impl),
                                               hit_kind_name(kind), tree_tokens, hit);
          benchmark::RegisterBenchmark(name.c_str(), bm_match, tree_tokens, kind, hit, impl);
        }
      }
    }
  }
}

}  // namespace radixkv::bench
