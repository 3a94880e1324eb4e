// BM_Evict/<impl>/leaves:<N>/pages_per_leaf:<k>: evicting pages from a cache that holds N
// evictable leaves of k pages each, hung off 8 system prompts of 64 pages; items = evicted pages,
// so the cost per page is 1 / items_per_second. Each iteration evicts a batch of 64 pages (whole
// leaves, in LRU order), and only that is timed (UseManualTime). Once a tenth of the leaves are
// gone they are cached again, untimed, so the evictable set stays between 0.9 N and N throughout.
//   radix:     RadixTree::evict_pages. With k = 1 every evicted page also removes a node (the worst
//              case); with k = 8 most pages come off the tail of a leaf.
//   blockhash: vLLM's eviction: pop the free queue's head, erase its hash from the map. The system
//              prompts' pages are pinned (as a live request would pin them) so only leaves go.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "bench/baselines/block_hash_index.h"
#include "bench/suite.h"
#include "bench/workload.h"
#include "radix/radix_tree.h"

namespace radixkv::bench {

namespace {

constexpr uint32_t kPageTokens = 16;
constexpr uint32_t kSystemPrompts = 8;
constexpr uint32_t kSystemPages = 64;
constexpr uint32_t kBatchPages = 64;

constexpr uint32_t kSystemTotalPages = kSystemPrompts * kSystemPages;

struct EvictWorld {
  EvictWorld(uint32_t leaves, uint32_t pages_per_leaf, bool blockhash)
      : leaves(leaves),
        pages_per_leaf(pages_per_leaf),
        blockhash(blockhash),
        pool(KvLayout{1, 1, 1, 2, kPageTokens}, kSystemTotalPages + leaves * pages_per_leaf + 1024),
        tree(pool, make_policy("lru")),
        // Exactly the pages it uses, so that its free queue holds nothing but cached pages.
        blocks(kPageTokens, kSystemTotalPages + leaves * pages_per_leaf) {
    Rng rng(7);
    for (auto& prompt : system_prompts) {
      for (uint32_t t = 0; t < kSystemPages * kPageTokens; ++t) prompt.push_back(rng.token());
    }
    if (blockhash) {
      std::vector<PageId> system_pages(kSystemTotalPages);
      for (PageId page = 0; page < kSystemTotalPages; ++page) system_pages[page] = page;
      blocks.lock(system_pages);
    }
    for (uint32_t leaf = 0; leaf < leaves; ++leaf) cache_leaf(leaf);
  }

  // Leaf j: system prompt j % 8, then k pages of its own tokens (derived from j, not stored).
  void cache_leaf(uint32_t leaf) {
    const uint32_t system = leaf % kSystemPrompts;
    key = system_prompts[system];
    Rng rng(uint64_t{leaf} * 0x100000001b3ull + 1);
    for (uint32_t t = 0; t < pages_per_leaf * kPageTokens; ++t) key.push_back(rng.token());
    pages.clear();
    if (blockhash) {
      // Fixed page ids: the system prompt's, then the leaf's own range.
      for (uint32_t p = 0; p < kSystemPages; ++p) pages.push_back(system * kSystemPages + p);
      for (uint32_t p = 0; p < pages_per_leaf; ++p) {
        pages.push_back(kSystemTotalPages + leaf * pages_per_leaf + p);
      }
      blocks.insert(0, key, pages);
      blocks.recycle(std::span<const PageId>(pages).subspan(kSystemPages));
      return;
    }
    fresh.clear();
    tree.peek(0, key, &pages);
    if (!pool.allocate(static_cast<uint32_t>(key.size() / kPageTokens - pages.size()), fresh)) {
      throw std::logic_error("EvictWorld: pool too small");
    }
    pages.insert(pages.end(), fresh.begin(), fresh.end());
    tree.insert(0, key, pages);
    pool.release(fresh);
  }

  // Caches again the leaves evicted since the last refill: LRU evicts them in the order they were
  // cached, so they are the next `evicted_pages / k` leaves after `refill_cursor`, cyclically.
  void refill() {
    for (uint64_t i = 0; i < evicted_since_refill / pages_per_leaf; ++i) {
      cache_leaf(refill_cursor);
      refill_cursor = refill_cursor + 1 == leaves ? 0 : refill_cursor + 1;
    }
    evicted_since_refill = 0;
  }

  uint64_t evict(uint64_t n) { return blockhash ? blocks.evict(n) : tree.evict_pages(n); }
  uint64_t evictable_leaves() const { return blockhash ? 0 : tree.evictable_leaves(); }

  uint32_t leaves, pages_per_leaf;
  bool blockhash;
  PagePool pool;
  RadixTree tree;
  BlockHashIndex blocks;
  std::vector<TokenId> system_prompts[kSystemPrompts];
  std::vector<TokenId> key;
  std::vector<PageId> pages, fresh;
  uint32_t refill_cursor = 0;
  uint64_t evicted_since_refill = 0;
};

EvictWorld& evict_world(uint32_t leaves, uint32_t pages_per_leaf, bool blockhash) {
  // One world at a time: the 10^6-leaf ones are large.
  static std::unique_ptr<EvictWorld> world;
  if (!world || world->leaves != leaves || world->pages_per_leaf != pages_per_leaf ||
      world->blockhash != blockhash) {
    world.reset();
    world = std::make_unique<EvictWorld>(leaves, pages_per_leaf, blockhash);
  }
  return *world;
}

void bm_evict(benchmark::State& state, uint32_t leaves, uint32_t pages_per_leaf, bool blockhash) {
  EvictWorld& world = evict_world(leaves, pages_per_leaf, blockhash);
  const uint64_t refill_at =
      std::max<uint64_t>(kBatchPages, uint64_t{leaves} * pages_per_leaf / 10);
  uint64_t evicted = 0, evictable_leaves = 0;
  const uint64_t nodes_before = world.tree.stats().evicted_nodes;
  for (auto _ : state) {
    // Refills are not timed. The manual clock times only the eviction: PauseTiming() and
    // ResumeTiming() read the thread's CPU clock, a system call (~1 us a pair on the VMs radixkv is
    // measured on), and at 10^3 leaves a refill comes every other batch, so pausing would add ~0.5
    // us to a 3 us batch there and nearly nothing at 10^6, flattering the growth between them.
    if (world.evicted_since_refill >= refill_at) world.refill();
    const auto start = Clock::now();
    const uint64_t got = world.evict(kBatchPages);
    state.SetIterationTime(seconds_since(start));
    world.evicted_since_refill += got;
    evicted += got;
    evictable_leaves += world.evictable_leaves();
  }
  if (evicted != kBatchPages * static_cast<uint64_t>(state.iterations())) {
    state.SkipWithError("eviction released fewer pages than asked");
  }
  state.SetItemsProcessed(static_cast<int64_t>(evicted));
  if (blockhash) return;
  // The work per page: nodes removed per evicted page is 1/k at every N.
  state.counters["nodes_per_page"] =
      static_cast<double>(world.tree.stats().evicted_nodes - nodes_before) /
      static_cast<double>(std::max<uint64_t>(evicted, 1));
  state.counters["evictable_leaves"] =
      benchmark::Counter(static_cast<double>(evictable_leaves), benchmark::Counter::kAvgIterations);
}

}  // namespace

void register_evict_benchmarks() {
  for (bool blockhash : {false, true}) {
    for (uint32_t pages_per_leaf : {1u, 8u}) {
      for (uint32_t leaves : {1'000u, 10'000u, 100'000u, 1'000'000u}) {
        const std::string name =
            fmt::format("BM_Evict/{}/leaves:{}/pages_per_leaf:{}",
                        blockhash ? "blockhash" : "radix", leaves, pages_per_leaf);
        benchmark::RegisterBenchmark(name.c_str(), bm_evict, leaves, pages_per_leaf, blockhash)
            ->UseManualTime();
      }
    }
  }
}

}  // namespace radixkv::bench
