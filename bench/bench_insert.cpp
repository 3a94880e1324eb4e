// BM_Insert/<impl>/<case>/tree:<T>/hit:<L>: caching a prompt whose first L tokens are cached and
// whose next L/4 tokens are new, in the 10^6-token world of bench_match.cpp.
//   branch: the cached part ends where a leaf ends (the next turn of a chat): a new child.
//   split:  the cached part ends inside an edge: the edge splits at L, and the new part hangs
//           off the split point. The block-hash index has no edges; its "split" is the same
//           page-by-page insert.
// Only the index's insert is timed, by a steady clock read around it (manual time: wall time, so
// the medians of repetitions are what to read on a noisy machine). Getting the pages (pool
// allocation) and undoing the insert, so that every iteration sees the same tree, are not timed.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "bench/match_world.h"
#include "bench/suite.h"

namespace radixkv::bench {

namespace {

constexpr uint64_t kInsertTreeTokens = 1'000'000;

enum class Impl { kRadix, kBlockHash, kLinear };

const char* impl_name(Impl impl) {
  switch (impl) {
    case Impl::kRadix:
      return "radix";
    case Impl::kBlockHash:
      return "blockhash";
    case Impl::kLinear:
      return "linear";
  }
  return "?";
}

// The pages a request would hold for `tokens`: the tree's for the cached part, fresh ones after.
void request_pages(MatchWorld& world, std::span<const TokenId> tokens, std::vector<PageId>& pages,
                   std::vector<PageId>& fresh) {
  pages.clear();
  fresh.clear();
  world.tree.peek(0, tokens, &pages);
  const auto missing =
      static_cast<uint32_t>(tokens.size() / world.tree.page_tokens() - pages.size());
  if (!world.pool.allocate(missing, fresh)) throw std::logic_error("BM_Insert: pool too small");
  pages.insert(pages.end(), fresh.begin(), fresh.end());
}

// Puts the probe's edge back as one unsplit edge: erase the two halves the split left, then cache
// the probe's stored prompt again.
void unsplit(MatchWorld& world, const Query& query) {
  const std::span<const TokenId> stored = world.workload.stored_tokens(query.stored);
  world.tree.erase_leaf(world.tree.match(0, stored).node);
  world.tree.erase_leaf(world.tree.match(0, stored.first(query.hit)).node);
  std::vector<PageId> pages, fresh;
  request_pages(world, stored, pages, fresh);
  world.tree.insert(0, stored, pages);
  world.pool.release(fresh);
}

void bm_insert(benchmark::State& state, HitKind kind, uint32_t hit, Impl impl) {
  MatchWorld& world = match_world(kInsertTreeTokens);
  const Query& query = world.workload.find(kind, hit)->queries.front();
  const uint32_t page_tokens = world.tree.page_tokens();
  const uint64_t splits_before = world.tree.stats().splits;
  std::vector<PageId> pages, fresh;
  uint64_t new_tokens = 0;
  for (auto _ : state) {
    request_pages(world, query.tokens, pages, fresh);
    const auto start = Clock::now();
    switch (impl) {
      case Impl::kRadix: {
        const InsertResult result = world.tree.insert(0, query.tokens, pages);
        state.SetIterationTime(seconds_since(start));
        new_tokens += uint64_t{result.new_pages} * page_tokens;
        world.tree.erase_leaf(result.node);
        if (kind == HitKind::kInside) unsplit(world, query);
        break;
      }
      case Impl::kBlockHash: {
        const uint32_t cached = world.blocks.insert(0, query.tokens, pages);
        state.SetIterationTime(seconds_since(start));
        new_tokens += query.tokens.size() / page_tokens * page_tokens - cached;
        world.blocks.erase(0, query.tokens, cached / page_tokens);
        break;
      }
      case Impl::kLinear: {
        world.linear.insert(query.tokens);
        state.SetIterationTime(seconds_since(start));
        new_tokens += query.tokens.size() - query.hit;
        world.linear.pop_back();
        break;
      }
    }
    world.pool.release(fresh);
  }
  state.counters["new_tokens"] =
      benchmark::Counter(static_cast<double>(new_tokens), benchmark::Counter::kAvgIterations);
  state.counters["splits"] =
      benchmark::Counter(static_cast<double>(world.tree.stats().splits - splits_before),
                         benchmark::Counter::kAvgIterations);
}

}  // namespace

void register_insert_benchmarks() {
  if (tree_sizes().back() < kInsertTreeTokens) return;
  for (uint32_t hit : {1024u, 16384u}) {
    for (HitKind kind : {HitKind::kBoundary, HitKind::kInside}) {
      for (Impl impl : {Impl::kRadix, Impl::kBlockHash, Impl::kLinear}) {
        const std::string name =
            fmt::format("BM_Insert/{}/{}/tree:{}/hit:{}", impl_name(impl),
                        kind == HitKind::kBoundary ? "branch" : "split", kInsertTreeTokens, hit);
        benchmark::RegisterBenchmark(name.c_str(), bm_insert, kind, hit, impl)->UseManualTime();
      }
    }
  }
}

}  // namespace radixkv::bench
