// BM_Evict/<impl>/leaves:<N>/pages_per_leaf:<k>: evicting pages from a cache that holds N
// evictable leaves of k pages each, hung off 8 system prompts of 64 pages; items = evicted pages,
// so the cost per page is 1 / items_per_second (and median_ns_per_page: the median batch, which a
// scheduler's interruption does not move). Each iteration evicts a batch of 64 pages (whole
// leaves, in LRU order), and only that is timed (UseManualTime). Once a tenth of the leaves are
// gone they are cached again, untimed, so the evictable set stays between 0.9 N and N throughout.
//   radix:     RadixTree::evict_pages. With k = 1 every evicted page also removes a node (the worst
//              case); with k = 8 most pages come off the tail of a leaf.
//   blockhash: vLLM's eviction: pop the free queue's head, erase its hash from the map. The system
//              prompts' pages are pinned (as a live request would pin them) so only leaves go.
//
// BM_EvictBound/<order>/leaves:<N>: this machine's floor for BM_Evict/radix/leaves:N/
// pages_per_leaf:1, measured in the same run: the cache lines that evicting a one-page leaf
// writes, in memory of the same sizes, fetched as far ahead and in the same bursts as evict_pages
// fetches them (radix/tree_internals.h, VictimLookahead), with no tree logic: per page, the two
// lines of a node block (N blocks of kNodeBlockBytes), one slot of a child table (8 tables sized as
// the tree's, one per system prompt) and one page refcount (4 bytes per page), each written once;
// items = pages, batches of 64 as BM_Evict. The order of the lines is precomputed:
//   random:  every line at random (the "random lines" bound);
//   ordered: node blocks and refcounts in the order the victims were made (what BM_Evict's LRU
//            order gives: leaves are cached and evicted in one cyclic order), slots at random.
// `lines_per_page` counts the lines; bench/README.md reports BM_Evict against both.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bench/baselines/block_hash_index.h"
#include "bench/suite.h"
#include "bench/workload.h"
#include "kv_store/heap.h"
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

// Each batch's time, for the median batch: a batch that the scheduler interrupts (the machines
// radixkv is measured on are shared) takes milliseconds and moves the mean, not the median.
class BatchTimes {
 public:
  void add(benchmark::State& state, double seconds) {
    state.SetIterationTime(seconds);
    seconds_.push_back(seconds);
  }
  // Counter median_ns_per_page: the median batch's time per page.
  void report(benchmark::State& state) {
    if (seconds_.empty()) return;
    const auto middle = seconds_.begin() + static_cast<std::ptrdiff_t>(seconds_.size() / 2);
    std::nth_element(seconds_.begin(), middle, seconds_.end());
    state.counters["median_ns_per_page"] = *middle * 1e9 / kBatchPages;
  }

 private:
  std::vector<double> seconds_;
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
  BatchTimes times;
  for (auto _ : state) {
    // Refills are not timed. The manual clock times only the eviction: PauseTiming() and
    // ResumeTiming() read the thread's CPU clock, a system call (~1 us a pair on the VMs radixkv is
    // measured on), and at 10^3 leaves a refill comes every other batch, so pausing would add ~0.5
    // us to a 3 us batch there and nearly nothing at 10^6, flattering the growth between them.
    if (world.evicted_since_refill >= refill_at) world.refill();
    const auto start = Clock::now();
    const uint64_t got = world.evict(kBatchPages);
    times.add(state, seconds_since(start));
    world.evicted_since_refill += got;
    evicted += got;
    evictable_leaves += world.evictable_leaves();
  }
  if (evicted != kBatchPages * static_cast<uint64_t>(state.iterations())) {
    state.SkipWithError("eviction released fewer pages than asked");
  }
  state.SetItemsProcessed(static_cast<int64_t>(evicted));
  times.report(state);
  if (blockhash) return;
  // The work per page: nodes removed per evicted page is 1/k at every N.
  state.counters["nodes_per_page"] =
      static_cast<double>(world.tree.stats().evicted_nodes - nodes_before) /
      static_cast<double>(std::max<uint64_t>(evicted, 1));
  state.counters["evictable_leaves"] =
      benchmark::Counter(static_cast<double>(evictable_leaves), benchmark::Counter::kAvgIterations);
}

// --- BM_EvictBound ---

// A one-page leaf's block with LRU: 40 bytes of policy state, the 72-byte node, 4 page ids and 16
// tokens (radix/radix_node.h), in mimalloc's 192-byte size class.
constexpr std::size_t kNodeBlockBytes = 192;
constexpr std::size_t kLine = 64;
// evict_pages' look-ahead (radix/tree_internals.h, VictimLookahead): every kBurst pages, the
// blocks of the pages 3 to 4 bursts ahead, the slots of those 2 to 3 ahead and the refcounts of
// those 1 to 2 ahead.
constexpr uint32_t kBurst = 8;

// Zeroed memory, every page of it touched, so that no page fault falls in the timed loop.
struct Region {
  explicit Region(std::size_t bytes)
      : size(bytes), base(static_cast<std::byte*>(heap::allocate_aligned_zeroed(bytes, kLine))) {
    for (std::size_t at = 0; at < bytes; at += 4096) base[at] = std::byte{1};
  }
  ~Region() { heap::release(base); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  std::size_t size;
  std::byte* base;
};

struct BoundWorld {
  BoundWorld(uint32_t leaves, bool random)
      : leaves(leaves),
        random(random),
        nodes(size_t{leaves} * kNodeBlockBytes),
        slots(kSystemPrompts * table_bytes(leaves)),
        refcounts(size_t{kSystemTotalPages + leaves + 1024} * sizeof(uint32_t)) {
    Rng rng(11);
    std::vector<uint32_t> node_order(leaves);
    for (uint32_t i = 0; i < leaves; ++i) node_order[i] = i;
    if (random) {
      for (uint32_t i = leaves - 1; i > 0; --i)
        std::swap(node_order[i], node_order[rng.next() % (i + 1)]);
    }
    const std::size_t table_slots = table_bytes(leaves) / 16;
    const std::size_t refcount_lines = refcounts.size / kLine;
    for (uint32_t i = 0; i < leaves; ++i) {
      node.push_back(nodes.base + size_t{node_order[i]} * kNodeBlockBytes);
      // Leaf i hangs from system prompt i % 8 (as in EvictWorld); its slot is where its hash lands.
      slot.push_back(slots.base + (i % kSystemPrompts) * table_bytes(leaves) +
                     rng.next() % table_slots * 16);
      const std::size_t page = kSystemTotalPages + i;
      refcount.push_back(random ? refcounts.base + rng.next() % refcount_lines * kLine
                                : refcounts.base + page * sizeof(uint32_t));
    }
  }

  // The bytes of one system prompt's child table as ChildTable sizes it: a power of two slots of
  // 16 bytes, at most 3/4 full.
  static std::size_t table_bytes(uint32_t leaves) {
    const std::size_t children = leaves / kSystemPrompts;
    std::size_t capacity = 4;
    while (children * 4 > capacity * 3) capacity *= 2;
    return capacity * 16;
  }

  [[gnu::always_inline]] static void touch(std::byte* line) {
    ++*std::launder(reinterpret_cast<uint64_t*>(line));
  }
  [[gnu::always_inline]] uint32_t at(uint64_t i) const { return static_cast<uint32_t>(i % leaves); }

  // Writes the lines of pages [first, first + n), fetching ahead as evict_pages does.
  void evict(uint64_t first, uint32_t n) {
    for (uint64_t i = first; i < first + n; ++i) {
      if (i % kBurst == 0) {
        for (uint64_t j = i + kBurst; j < i + 2 * kBurst; ++j)
          __builtin_prefetch(refcount[at(j)], 1);
        for (uint64_t j = i + 2 * kBurst; j < i + 3 * kBurst; ++j)
          __builtin_prefetch(slot[at(j)], 1);
        for (uint64_t j = i + 3 * kBurst; j < i + 4 * kBurst; ++j) {
          __builtin_prefetch(node[at(j)], 1);
          __builtin_prefetch(node[at(j)] + kLine, 1);
        }
      }
      touch(node[at(i)]);
      touch(node[at(i)] + kLine);
      touch(slot[at(i)]);
      touch(refcount[at(i)]);
    }
  }

  uint32_t leaves;
  bool random;
  Region nodes, slots, refcounts;
  std::vector<std::byte*> node, slot, refcount;  // per page, in eviction order
};

void bm_evict_bound(benchmark::State& state, uint32_t leaves, bool random) {
  static std::unique_ptr<BoundWorld> world;
  if (!world || world->leaves != leaves || world->random != random) {
    world.reset();
    world = std::make_unique<BoundWorld>(leaves, random);
  }
  uint64_t cursor = 0;
  BatchTimes times;
  for (auto _ : state) {
    const auto start = Clock::now();
    world->evict(cursor, kBatchPages);
    times.add(state, seconds_since(start));
    cursor += kBatchPages;
  }
  state.SetItemsProcessed(static_cast<int64_t>(kBatchPages * state.iterations()));
  times.report(state);
  state.counters["lines_per_page"] = 4;
}

}  // namespace

void register_evict_benchmarks() {
  for (const bool random : {true, false}) {
    for (uint32_t leaves : {1'000u, 1'000'000u}) {
      const std::string name =
          fmt::format("BM_EvictBound/{}/leaves:{}", random ? "random" : "ordered", leaves);
      benchmark::RegisterBenchmark(name.c_str(), bm_evict_bound, leaves, random)->UseManualTime();
    }
  }
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
