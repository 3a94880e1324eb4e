// Every policy driven through the radix tree: evictions take only unpinned leaves, the tree's
// invariants and the page accounting hold after every step, and what the trace says about an
// access (its priority) reaches the policy.
#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <vector>

#include "eviction/fifo_policy.h"
#include "eviction/gdsf_policy.h"
#include "eviction/lfu_policy.h"
#include "eviction/lru_policy.h"
#include "eviction/newest_first_policies.h"
#include "eviction/priority_policy.h"
#include "eviction/reuse_policy.h"
#include "eviction/sieve_policy.h"
#include "eviction/slru_policy.h"
#include "tests/cache_fixture.h"
#include "tests/tier_fixture.h"

using namespace radixkv;
using radixkv::testing::CacheFixture;

#define RADIXKV_ALL_POLICIES                                                             \
  LruPolicy, LfuPolicy, FifoPolicy, PriorityPolicy, SlruPolicy, SievePolicy, GdsfPolicy, \
      ReusePolicy, MruPolicy, FiloPolicy

namespace {

// Keys of 1..6 pages over a two-token alphabet after one of three stems: many shared prefixes,
// splits, and parents that become leaves.
std::vector<TokenId> random_key(std::mt19937_64& rng, uint32_t page_tokens) {
  const auto pages = static_cast<uint32_t>(1 + rng() % 6);
  std::vector<TokenId> key(size_t{pages} * page_tokens);
  const auto stem = static_cast<TokenId>(rng() % 3) * 100;
  for (size_t i = 0; i < key.size(); ++i) {
    key[i] = i < page_tokens ? stem + static_cast<TokenId>(i) : static_cast<TokenId>(rng() % 2);
  }
  return key;
}

struct Pin {
  std::vector<TokenId> key;
  RadixNode* node;
  uint32_t tokens;
};

}  // namespace

TEST_CASE_TEMPLATE("through the tree, eviction takes only unpinned leaves, page by page", T,
                   RADIXKV_ALL_POLICIES) {
  const std::string_view name = T().name();
  for (uint32_t P : {1u, 4u}) {
    CAPTURE(P);
    CacheFixture f(P, 512, name);
    std::mt19937_64 rng(P * 977 + name.size());
    for (int i = 0; i < 60; ++i) {
      const auto key = random_key(rng, P);
      f.tree.match(0, key, nullptr, AccessHint{static_cast<int32_t>(rng() % 101), i * 0.5});
      f.cache(key);
    }
    f.check();
    // Pin a few cached prefixes, as live sequences do.
    std::vector<Pin> pins;
    for (int i = 0; i < 5; ++i) {
      const auto key = random_key(rng, P);
      const MatchResult m = f.tree.match(0, key);
      if (m.tokens == 0) continue;
      f.tree.lock(m.node);
      pins.push_back({key, m.node, m.tokens});
    }
    f.check();
    const uint64_t protected_pages = f.tree.protected_pages();
    while (f.tree.evictable_pages() > 0) {
      const uint64_t before = f.tree.cached_pages();
      REQUIRE(f.tree.evict_pages(1) == 1);
      REQUIRE(f.tree.cached_pages() == before - 1);
      f.check();
      for (const Pin& pin : pins) REQUIRE(f.tree.peek(0, pin.key) >= pin.tokens);
    }
    CHECK(f.tree.evict_pages(1) == 0);
    CHECK(f.tree.cached_pages() == protected_pages);
    for (const Pin& pin : pins) f.tree.unlock(pin.node);
    f.check();
    CHECK(f.tree.evict_pages(f.tree.cached_pages()) == protected_pages);
    CHECK(f.tree.cached_pages() == 0);
    CHECK(f.tree.evictable_leaves() == 0);
    f.check();
  }
}

TEST_CASE_TEMPLATE("through the tree, random operations keep every invariant", T,
                   RADIXKV_ALL_POLICIES) {
  const std::string_view name = T().name();
  CacheFixture f(2, 64, name);
  BudgetedAllocator alloc(
      f.pool, f.evictor,
      CacheBudget({64 * f.pool.bytes_per_page(), 1.0, 1.0}, f.pool.bytes_per_page()));
  std::mt19937_64 rng(4242 + name.size());
  std::vector<Pin> pins;
  double now = 0;
  for (int op = 0; op < 4000; ++op) {
    const int choice = static_cast<int>(rng() % 10);
    now += 0.25;
    const AccessHint hint{static_cast<int32_t>(rng() % 101), now};
    const auto key = random_key(rng, 2);
    if (choice < 4) {  // a request: match, allocate the rest (evicting), insert, release
      std::vector<PageId> pages;
      const MatchResult m = f.tree.match(0, key, &pages, hint);
      f.tree.lock(m.node);  // keeps the matched pages while the allocation evicts
      std::vector<PageId> fresh;
      if (alloc.allocate(static_cast<uint32_t>(key.size() / 2 - pages.size()), fresh).ok()) {
        pages.insert(pages.end(), fresh.begin(), fresh.end());
        f.tree.insert(0, key, pages, hint);
        f.pool.release(fresh);
      }
      f.tree.unlock(m.node);
    } else if (choice < 6) {  // a pinned prefix
      const MatchResult m = f.tree.match(0, key, nullptr, hint);
      f.tree.lock(m.node);
      pins.push_back({key, m.node, m.tokens});
    } else if (choice < 8 && !pins.empty()) {
      const size_t i = rng() % pins.size();
      f.tree.unlock(pins[i].node);
      pins.erase(pins.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      f.tree.evict_pages(1 + rng() % 5);
    }
    if (op % 50 == 0) {
      f.check();
      for (const Pin& pin : pins) REQUIRE(f.tree.peek(0, pin.key) >= pin.tokens);
    }
  }
  for (const Pin& pin : pins) f.tree.unlock(pin.node);
  f.tree.evict_pages(f.tree.cached_pages());
  CHECK(f.tree.cached_pages() == 0);
  f.check();
}

namespace {

// The policy it wraps, minus next_victim_after(): a tree over it evicts without looking ahead.
class NoLookahead final : public EvictionPolicy {
 public:
  explicit NoLookahead(std::unique_ptr<EvictionPolicy> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  std::size_t state_bytes() const override { return inner_->state_bytes(); }
  void adopt(EvictionEntry& e, const AccessHistory& past) override { inner_->adopt(e, past); }
  AccessHistory history(const EvictionEntry& e) const override { return inner_->history(e); }
  void add(EvictionEntry& e) override { inner_->add(e); }
  void remove(EvictionEntry& e) override { inner_->remove(e); }
  void on_access(EvictionEntry& e, const AccessHint& hint) override { inner_->on_access(e, hint); }
  EvictionEntry* victim() override { return inner_->victim(); }
  bool contains(const EvictionEntry& e) const override { return inner_->contains(e); }
  std::size_t size() const override { return inner_->size(); }

 private:
  std::unique_ptr<EvictionPolicy> inner_;
};

}  // namespace

// evict_pages looks ahead at the coming victims (next_victim_after) to prefetch their memory once
// at least 32,768 leaves are evictable; it must take exactly the pages it takes without.
TEST_CASE_TEMPLATE("through the tree, looking ahead at victims changes no eviction", T,
                   RADIXKV_ALL_POLICIES) {
  constexpr uint32_t kLeaves = 40'000, kPages = 3 * kLeaves;
  const KvLayout layout{1, 1, 1, 2, 1};
  PagePool pool_ahead(layout, kPages), pool_blind(layout, kPages);
  RadixTree ahead(pool_ahead, std::make_unique<T>());
  RadixTree blind(pool_blind, std::make_unique<NoLookahead>(std::make_unique<T>()));
  std::mt19937_64 rng(99 + T().name().size());
  // Stem (8), middle (2,000: parents that become leaves as their children go), then 1-2 pages of
  // the leaf's own; accesses with priorities and a clock, some leaves touched again.
  std::vector<std::vector<TokenId>> keys;
  for (uint32_t i = 0; keys.size() < kLeaves; ++i) {
    std::vector<TokenId> key{static_cast<TokenId>(i % 8), static_cast<TokenId>(1000 + rng() % 2000),
                             static_cast<TokenId>(100000 + i)};
    if (rng() % 2 == 0) key.push_back(static_cast<TokenId>(rng() % 50));
    const AccessHint hint{static_cast<int32_t>(rng() % 101), i * 0.01,
                          static_cast<uint32_t>(rng() % 2048)};
    for (RadixTree* tree : {&ahead, &blind}) {
      PagePool& pool = tree == &ahead ? pool_ahead : pool_blind;
      tree->match(0, key, nullptr, hint);
      testing::cache_tokens(pool, *tree, key, 0);
    }
    keys.push_back(std::move(key));
    if (i % 7 == 0) {
      const auto& again = keys[rng() % keys.size()];
      for (RadixTree* tree : {&ahead, &blind}) tree->match(0, again, nullptr, hint);
    }
  }
  REQUIRE(ahead.evictable_leaves() >= 32'768);
  REQUIRE(ahead.cached_pages() == blind.cached_pages());
  const auto indexed = [](const RadixTree& tree, const PagePool& pool) {
    std::vector<bool> in(pool.capacity_pages());
    for (PageId p = 0; p < pool.capacity_pages(); ++p) in[p] = tree.indexes_page(p);
    return in;
  };
  while (ahead.cached_pages() > 0) {
    const uint64_t n = 1 + rng() % 3000;
    REQUIRE(ahead.evict_pages(n) == blind.evict_pages(n));
    REQUIRE(ahead.stats().evicted_nodes == blind.stats().evicted_nodes);
    REQUIRE(indexed(ahead, pool_ahead) == indexed(blind, pool_blind));
  }
  ahead.verify();
}

TEST_CASE("through the tree, the priority of an access reaches the policy") {
  CacheFixture f(2, 64, "priority");
  const std::vector<TokenId> keep{1, 1, 2, 2};
  const std::vector<TokenId> drop{3, 3, 4, 4};
  std::vector<PageId> pages;
  REQUIRE(f.pool.allocate(2, pages));
  f.tree.insert(0, keep, pages, AccessHint{90});
  f.pool.release(pages);
  pages.clear();
  REQUIRE(f.pool.allocate(2, pages));
  f.tree.insert(0, drop, pages, AccessHint{10});  // newer, but lower priority
  f.pool.release(pages);
  CHECK(f.tree.evict_pages(2) == 2);
  CHECK(f.tree.peek(0, keep) == 4);
  CHECK(f.tree.peek(0, drop) == 0);
  f.check();
}

// What a split hands to the new upper node, which the policies read when it becomes a leaf (and
// tests/tree_model.h assumes): the node's creation time, hits, latest priority and locks; the
// lower part keeps the node itself (so locked handles stay valid) with its own past. Each policy
// keeps its own part of a past (EvictionPolicy::history): LFU the hits and the latest tick, FIFO
// the creation time, the priority policy the latest priority and tick.
namespace {

struct SplitPasts {
  AccessHistory upper, lower;
};

// Caches [1 2 3 4] (tick 1, created at 0), matches it three times with priority 70 (ticks 2..4),
// then matches [1 2] with priority 20 (tick 5), which splits it. Returns both parts' pasts as the
// policy keeps them, just after the split; `also` runs on the fixture then (for LFU's evictions).
template <typename Also>
SplitPasts split_the_edge(std::string_view policy, Also&& also) {
  CacheFixture f(1, 64, policy);
  const std::vector<TokenId> key{1, 2, 3, 4};
  const InsertResult inserted = f.cache(key);
  RadixNode* node = inserted.node;
  f.tree.lock(node);  // keeps the handle valid
  for (int i = 0; i < 3; ++i) f.tree.match(0, key, nullptr, AccessHint{70});
  const std::vector<TokenId> head{1, 2};
  const MatchResult m = f.tree.match(0, head, nullptr, AccessHint{20});
  RadixNode* upper = m.node;
  REQUIRE(upper != node);
  CHECK(node->parent() == upper);
  CHECK(f.tree.stats().splits == 1);
  // The upper node: the first two pages and the node's locks; the lower part the last two.
  CHECK(upper->num_pages() == 2);
  CHECK(upper->prefix_pages == 0);
  CHECK(upper->lock_count() == 1);
  CHECK(node->num_pages() == 2);
  CHECK(node->prefix_pages == 2);
  const SplitPasts pasts{f.tree.policy().history(*upper), f.tree.policy().history(*node)};
  also(f, node, head);
  return pasts;
}

}  // namespace

TEST_CASE("through the tree, a split's upper node inherits the past of the node it came from") {
  // The upper node: the node's history, and this match's touch; the lower part, untouched by the
  // match, its own.
  const SplitPasts lfu =
      split_the_edge("lfu", [](CacheFixture& f, RadixNode* node, const std::vector<TokenId>& head) {
        // LFU reads the inherited hits: once the lower part is gone, the upper leaf (5 hits)
        // outlives a newer leaf with 2.
        f.tree.unlock(node);
        f.tree.erase_leaf(node);
        const std::vector<TokenId> other{9, 9};
        f.cache(other);
        f.tree.match(0, other);
        CHECK(f.tree.evict_pages(2) == 2);
        CHECK(f.tree.peek(0, head) == 2);
        CHECK(f.tree.peek(0, other) == 0);
        f.check();
      });
  CHECK(lfu.upper.hits == 5);
  CHECK(lfu.upper.last.tick == 5);
  CHECK(lfu.lower.hits == 4);
  CHECK(lfu.lower.last.tick == 4);
  const auto unlock = [](CacheFixture& f, RadixNode* node, const std::vector<TokenId>&) {
    f.tree.unlock(node);
  };
  const SplitPasts fifo = split_the_edge("fifo", unlock);
  CHECK(fifo.upper.created == 0);
  CHECK(fifo.lower.created == 0);
  const SplitPasts priority = split_the_edge("priority", unlock);
  CHECK(priority.upper.last.priority == 20);
  CHECK(priority.upper.last.tick == 5);
  CHECK(priority.lower.last.priority == 70);
  CHECK(priority.lower.last.tick == 4);
}

TEST_CASE("through the tree, the time and answer length of an access reach the policy") {
  CacheFixture f(2, 64, "reuse");
  const std::vector<TokenId> first{1, 1, 2, 2};
  const std::vector<TokenId> branch{1, 1, 5, 5};
  std::vector<PageId> pages;
  REQUIRE(f.pool.allocate(2, pages));
  const RadixNode* leaf = f.tree.insert(0, first, pages, AccessHint{35, 2.5, 700}).node;
  f.pool.release(pages);
  const auto past = [&](const RadixNode* node) { return f.tree.policy().history(*node).last; };
  CHECK(past(leaf).now == 2.5);
  CHECK(past(leaf).output_tokens == 700);
  // A branch splits the edge: its stem (the upper half) and the new leaf carry the latest access,
  // the lower half keeps its own.
  pages.clear();
  REQUIRE(f.pool.allocate(1, pages));
  const std::vector<PageId> path{leaf->page_ids()[0], pages[0]};
  const RadixNode* stem = f.tree.insert(0, branch, path, AccessHint{35, 4.0, 9}).node->parent();
  f.pool.release(pages);
  CHECK(stem->num_pages() == 1);
  CHECK(leaf->parent() == stem);
  CHECK(past(stem).now == 4.0);
  CHECK(past(stem).output_tokens == 9);
  CHECK(past(leaf).now == 2.5);
  CHECK(past(leaf).output_tokens == 700);
  f.check();
}

// A tree with a host tier keeps each node's past (radix/radix_node.h), because the host policy
// meets a node only when its first host page comes: it adopts the whole past, not what the device
// policy happens to keep of it (LRU keeps no hit count).
TEST_CASE("through the tree, a node's host part adopts the node's whole past") {
  testing::TierOptions o;
  o.host_pages = 4;
  o.device_policy = "lru";
  o.host_policy = "lfu";
  testing::TierFixture f(1, o);
  const std::vector<TokenId> hot{1}, cold{2};
  f.cache(hot);                                      // tick 1
  for (int i = 0; i < 3; ++i) f.tree.match(0, hot);  // ticks 2..4: 4 hits
  f.cache(cold);                                     // tick 5: 1 hit, but newer
  REQUIRE(f.tree.evict_pages(2) == 2);               // both to the host
  REQUIRE(f.tree.host_cached_pages() == 2);
  f.check();
  // The host's LFU drops the page with fewer hits, although its last access is the newer one.
  CHECK(f.tree.evict_host_pages(1) == 1);
  CHECK(f.tree.peek(0, hot) == 1);
  CHECK(f.tree.peek(0, cold) == 0);
  f.check();
}

namespace {

// A policy whose per-entry state would leave the entries after it misaligned.
class OddStatePolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "odd"; }
  std::size_t state_bytes() const override { return 12; }
  void add(EvictionEntry&) override {}
  void remove(EvictionEntry&) override {}
  void on_access(EvictionEntry&, const AccessHint&) override {}
  EvictionEntry* victim() override { return nullptr; }
  bool contains(const EvictionEntry&) const override { return false; }
  std::size_t size() const override { return 0; }
};

}  // namespace

TEST_CASE("a policy whose state is not a multiple of 8 bytes is refused, naming it") {
  PagePool pool(KvLayout{1, 1, 4, 2, 1}, 8);
  CHECK_THROWS_WITH_AS(RadixTree(pool, std::make_unique<OddStatePolicy>()),
                       doctest::Contains("eviction policy 'odd' keeps 12 bytes per entry"),
                       std::invalid_argument);
  PagePool host(KvLayout{1, 1, 4, 2, 1}, 8);
  testing::TestCopier copier;
  RadixTree tree(pool, make_policy("lru"));
  HostTierSetup setup;
  setup.pool = &host;
  setup.copier = &copier;
  setup.policy = std::make_unique<OddStatePolicy>();
  CHECK_THROWS_WITH_AS(tree.add_host_tier(std::move(setup)),
                       doctest::Contains("add_host_tier: the eviction policy 'odd' keeps 12"),
                       std::invalid_argument);
  CHECK_FALSE(tree.has_host_tier());
}
