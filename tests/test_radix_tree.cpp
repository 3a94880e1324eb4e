#include <doctest/doctest.h>

#include <algorithm>
#include <ranges>
#include <span>

#include "eviction/lfu_policy.h"
#include "tests/cache_fixture.h"

using namespace radixkv;
using radixkv::testing::CacheFixture;
using radixkv::testing::iota_tokens;

namespace {

// A key of `pages` whole pages whose tokens start at `first`.
std::vector<TokenId> key(uint32_t page_tokens, uint32_t pages, TokenId first = 0) {
  return iota_tokens(size_t{page_tokens} * pages, first);
}

}  // namespace

TEST_CASE("insert, match, partial match and split at page sizes 1, 2 and 16") {
  for (uint32_t P : {1u, 2u, 16u}) {
    CAPTURE(P);
    CacheFixture f(P);
    const auto a = key(P, 6);
    f.cache(a);
    f.check();

    std::vector<PageId> pages;
    // Whole key, plus a ragged tail that is not a whole page: only whole pages match.
    auto longer = a;
    longer.push_back(999);
    MatchResult m = f.tree.match(0, longer, &pages);
    CHECK(m.tokens == 6 * P);
    CHECK(pages.size() == 6);
    CHECK(std::equal(pages.begin(), pages.end(), m.node->page_ids().begin()));

    // Diverge in the middle of the fourth page: three pages match and the edge splits there.
    auto branch = a;
    branch[3 * P + P / 2] = -7;
    pages.clear();
    m = f.tree.match(0, branch, &pages);
    CHECK(m.tokens == 3 * P);
    CHECK(pages.size() == 3);
    CHECK(m.node->num_pages() == 3);
    CHECK(m.node->num_children() == 1);
    CHECK(f.tree.stats().splits == 1);
    f.check();

    // Insert the branch: three pages are cached already, the other three become a sibling leaf.
    std::vector<PageId> fresh;
    REQUIRE(f.pool.allocate(6, fresh));
    const InsertResult r = f.tree.insert(0, branch, fresh);
    CHECK(r.cached_tokens == 3 * P);
    CHECK(r.new_pages == 3);
    CHECK(m.node->num_children() == 2);
    // The tree kept its own pages for the cached part: the caller's duplicates are not indexed.
    for (int i = 0; i < 3; ++i) CHECK_FALSE(f.tree.indexes_page(fresh[i]));
    for (int i = 3; i < 6; ++i) CHECK(f.tree.indexes_page(fresh[i]));
    f.check({fresh});
    f.pool.release(fresh);
    f.check();
    CHECK(f.tree.peek(0, branch) == 6 * P);
    CHECK(f.tree.peek(0, a) == 6 * P);
    CHECK(f.tree.cached_pages() == 9);
  }
}

TEST_CASE("a node and its arrays are one block that splits and evictions keep consistent") {
  for (uint32_t P : {1u, 16u}) {
    CAPTURE(P);
    CacheFixture f(P);
    // One allocation per node (radix_node.h): the namespace root and the leaf.
    uint64_t allocations = f.tree.stats().heap_allocations;
    const auto a = key(P, 6);
    std::vector<PageId> pages_a;
    REQUIRE(f.pool.allocate(6, pages_a));
    const RadixNode* leaf = f.tree.insert(0, a, pages_a).node;
    f.pool.release(pages_a);
    CHECK(f.tree.stats().heap_allocations - allocations == 2);
    allocations = f.tree.stats().heap_allocations;

    // A split in the middle makes one block for the upper part; both parts keep their own tokens
    // and page ids, whose arrays sit at different places in their blocks.
    auto branch = a;
    branch[2 * P] = -7;
    const RadixNode* upper = f.tree.match(0, branch).node;
    CHECK(f.tree.stats().heap_allocations - allocations == 1);
    REQUIRE(upper->num_pages() == 2);
    REQUIRE(leaf->num_pages() == 4);
    CHECK(std::ranges::equal(upper->edge_tokens(P), std::span(a).first(2 * P)));
    CHECK(std::ranges::equal(leaf->edge_tokens(P), std::span(a).subspan(2 * P)));
    CHECK(std::ranges::equal(upper->page_ids(), std::span(pages_a).first(2)));
    CHECK(std::ranges::equal(leaf->page_ids(), std::span(pages_a).subspan(2)));
    f.check();

    // Eviction reads the tail page id from the block: exactly pages_a[5], then [4], leave.
    CHECK(f.tree.evict_pages(2) == 2);
    CHECK_FALSE(f.tree.indexes_page(pages_a[5]));
    CHECK_FALSE(f.tree.indexes_page(pages_a[4]));
    for (int i = 0; i < 4; ++i) CHECK(f.tree.indexes_page(pages_a[i]));
    std::vector<PageId> matched;
    CHECK(f.tree.peek(0, a, &matched) == 4 * P);
    CHECK(std::ranges::equal(matched, std::span(pages_a).first(4)));
    f.check();
  }
}

TEST_CASE("a key shorter than one page matches and caches nothing") {
  CacheFixture f(16);
  const auto a = key(16, 2);
  f.cache(a);
  const std::vector<TokenId> short_key(a.begin(), a.begin() + 15);
  CHECK(f.tree.match(0, short_key).tokens == 0);
  CHECK(f.cache(short_key).new_pages == 0);
  CHECK(f.tree.cached_pages() == 2);
  f.check();
}

TEST_CASE("namespaces never share nodes") {
  CacheFixture f(2);
  const auto a = key(2, 4);
  f.cache(a, /*ns=*/1);
  CHECK(f.tree.peek(1, a) == 8);
  CHECK(f.tree.peek(2, a) == 0);
  CHECK(f.tree.match(2, a).tokens == 0);
  const InsertResult r = f.cache(a, 2);
  CHECK(r.cached_tokens == 0);
  CHECK(r.new_pages == 4);
  CHECK(f.tree.cached_pages() == 8);
  f.check();
}

TEST_CASE("inserting a cached prefix returns its length and keeps the tree's pages") {
  CacheFixture f(4);
  const auto a = key(4, 5);
  f.cache(a);
  std::vector<PageId> canonical;
  f.tree.match(0, a, &canonical);
  std::vector<PageId> duplicate;
  REQUIRE(f.pool.allocate(5, duplicate));
  const InsertResult r = f.tree.insert(0, a, duplicate);
  CHECK(r.cached_tokens == 20);
  CHECK(r.new_pages == 0);
  std::vector<PageId> after;
  f.tree.match(0, a, &after);
  CHECK(after == canonical);
  f.check({duplicate});
  f.pool.release(duplicate);
  f.check();
}

TEST_CASE("locks move pages between evictable and protected and back") {
  CacheFixture f(2);
  const auto a = key(2, 4);
  auto b = a;
  b[5] = -1;  // diverges in page 2: shares two pages with a
  f.cache(a);
  f.cache(b);
  CHECK(f.tree.cached_pages() == 6);
  CHECK(f.tree.evictable_pages() == 6);
  MatchResult m = f.tree.match(0, b);
  f.tree.lock(m.node);
  CHECK(f.tree.protected_pages() == 4);  // b's own two pages and the shared two
  CHECK(f.tree.evictable_pages() == 2);
  CHECK(f.tree.evictable_leaves() == 1);
  f.check();
  // Eviction can only take a's private tail while b is locked.
  CHECK(f.tree.evict_pages(100) == 2);
  CHECK(f.tree.cached_pages() == 4);
  CHECK(f.tree.peek(0, b) == 8);
  f.tree.unlock(m.node);
  CHECK(f.tree.protected_pages() == 0);
  CHECK(f.tree.evictable_pages() == 4);
  f.check();
}

TEST_CASE("eviction follows LRU, takes pages from the tail, and then offers the parent") {
  CacheFixture f(1);
  const std::vector<TokenId> stem{1, 2, 3};
  std::vector<TokenId> x = stem, y = stem;
  x.insert(x.end(), {10, 11});
  y.insert(y.end(), {20, 21});
  f.cache(x);
  f.cache(y);
  f.tree.match(0, x);  // x is now the most recent; y is the LRU leaf

  CHECK(f.tree.evict_pages(1) == 1);  // y's last page
  CHECK(f.tree.peek(0, y) == 4);
  CHECK(f.tree.evict_pages(1) == 1);  // y's remaining page: y's node is gone
  CHECK(f.tree.peek(0, y) == 3);
  CHECK(f.tree.peek(0, x) == 5);
  f.check();
  // Now x is the only leaf; then the stem becomes a leaf and goes last.
  CHECK(f.tree.evict_pages(2) == 2);
  CHECK(f.tree.peek(0, x) == 3);
  CHECK(f.tree.evictable_leaves() == 1);
  CHECK(f.tree.evict_pages(10) == 3);
  CHECK(f.tree.cached_pages() == 0);
  CHECK(f.pool.free_pages() == f.pool.capacity_pages());
  f.check();
}

TEST_CASE("a parent that becomes a leaf is ordered by its own last access") {
  CacheFixture f(1);
  f.cache(std::vector<TokenId>{1, 2});       // t1: stem [1] with child [2]
  f.cache(std::vector<TokenId>{7});          // t2: another leaf
  f.cache(std::vector<TokenId>{1, 3});       // t3: the stem [1] is touched again
  f.tree.match(0, std::vector<TokenId>{7});  // t4: [7] is newer than the stem
  // Evict [2] (oldest), then [3]: the stem becomes a leaf stamped t3, older than [7] at t4.
  CHECK(f.tree.evict_pages(2) == 2);
  CHECK(f.tree.peek(0, std::vector<TokenId>{1}) == 1);
  CHECK(f.tree.evict_pages(1) == 1);
  CHECK(f.tree.peek(0, std::vector<TokenId>{1}) == 0);
  CHECK(f.tree.peek(0, std::vector<TokenId>{7}) == 1);
  f.check();
}

TEST_CASE("erase_leaf removes an evictable leaf and refuses anything else") {
  CacheFixture f(2);
  f.cache(key(2, 3));
  f.cache(key(2, 2, 100));
  MatchResult m = f.tree.match(0, key(2, 3));
  f.tree.lock(m.node);
  CHECK_THROWS_AS(f.tree.erase_leaf(m.node), std::logic_error);
  f.tree.unlock(m.node);
  f.tree.erase_leaf(m.node);
  CHECK(f.tree.peek(0, key(2, 3)) == 0);
  CHECK(f.tree.cached_pages() == 2);
  // An explicit erase is not an eviction: the eviction counters stay as they were.
  CHECK(f.tree.stats().evicted_pages == 0);
  CHECK(f.tree.stats().evicted_nodes == 0);
  CHECK(f.tree.evict_pages(2) == 2);
  CHECK(f.tree.stats().evicted_pages == 2);
  CHECK(f.tree.stats().evicted_nodes == 1);
  f.check();
}

TEST_CASE("dump lists every node") {
  CacheFixture f(1);
  f.cache(std::vector<TokenId>{1, 2, 3});
  f.cache(std::vector<TokenId>{1, 2, 9});
  const std::string text = f.tree.dump();
  CHECK(text.find("[1 2]") != std::string::npos);
  CHECK(text.find("[3]") != std::string::npos);
  CHECK(text.find("[9]") != std::string::npos);
}

TEST_CASE("an access that counts no hit stamps the path and leaves its hits (a chunked insert)") {
  // The node's hits and stamp as LFU keeps them (the tree keeps none of its own).
  CacheFixture f(1, 256, "lfu");
  const auto& lfu = dynamic_cast<const LfuPolicy&>(f.tree.policy());
  const std::vector<TokenId> x{1, 2, 3};
  const RadixNode* node = f.cache(x).node;
  const uint64_t hits = lfu.history(*node).hits;
  const uint64_t stamp = lfu.history(*node).last.tick;
  f.tree.match(0, x, nullptr, AccessHint{.counts_as_hit = false});
  CHECK(lfu.history(*node).hits == hits);
  CHECK(lfu.history(*node).last.tick > stamp);
  f.tree.match(0, x);
  CHECK(lfu.history(*node).hits == hits + 1);
  std::vector<PageId> pages;
  REQUIRE(f.pool.allocate(3, pages));
  f.tree.insert(0, x, pages, AccessHint{.counts_as_hit = false});
  f.pool.release(pages);
  CHECK(lfu.history(*node).hits == hits + 1);
  f.check();
}

TEST_CASE("namespace_root and for_each_child read the tree as it is") {
  CacheFixture f(1);
  CHECK(f.tree.namespace_root(0) == nullptr);
  const RadixNode* x = f.cache(std::vector<TokenId>{1, 2, 3}).node;
  const RadixNode* y = f.cache(std::vector<TokenId>{1, 2, 7, 8}).node;
  f.cache(std::vector<TokenId>{5}, 9);
  const RadixNode* root = f.tree.namespace_root(0);
  REQUIRE(root != nullptr);
  CHECK(root->is_root());
  std::vector<const RadixNode*> top;
  root->for_each_child([&](const RadixNode* child) { top.push_back(child); });
  REQUIRE(top.size() == 1);  // the split [1, 2]
  CHECK(top[0]->num_pages() == 2);
  std::vector<const RadixNode*> below;
  top[0]->for_each_child([&](const RadixNode* child) { below.push_back(child); });
  std::ranges::sort(below);
  std::vector<const RadixNode*> expected{x, y};
  std::ranges::sort(expected);
  CHECK(below == expected);
  CHECK(x->parent() == top[0]);
  CHECK(f.tree.namespace_root(9) != root);
  CHECK(f.tree.namespace_root(3) == nullptr);
}

namespace {

// LRU that counts how often it is asked for a victim, and says or denies that its victim stays
// first (victim_stays_first).
class CountingLru final : public EvictionPolicy {
 public:
  explicit CountingLru(bool stays) : stays_(stays), inner_(make_policy("lru")) {}
  std::string_view name() const override { return "counting-lru"; }
  std::size_t state_bytes() const override { return inner_->state_bytes(); }
  void adopt(EvictionEntry& e, const AccessHistory& past) override { inner_->adopt(e, past); }
  AccessHistory history(const EvictionEntry& e) const override { return inner_->history(e); }
  void add(EvictionEntry& e) override { inner_->add(e); }
  void remove(EvictionEntry& e) override { inner_->remove(e); }
  void on_access(EvictionEntry& e, const AccessHint& h) override { inner_->on_access(e, h); }
  EvictionEntry* victim() override {
    ++asked;
    return inner_->victim();
  }
  bool victim_stays_first() const override { return stays_; }
  bool contains(const EvictionEntry& e) const override { return inner_->contains(e); }
  std::size_t size() const override { return inner_->size(); }
  int asked = 0;

 private:
  bool stays_;
  std::unique_ptr<EvictionPolicy> inner_;
};

}  // namespace

TEST_CASE(
    "a policy whose victim stays first gives up a leaf's pages in one run, no more than asked") {
  for (const bool stays : {false, true}) {
    CAPTURE(stays);
    PagePool pool(KvLayout{1, 1, 4, 2, 1}, 64);
    auto policy = std::make_unique<CountingLru>(stays);
    CountingLru& counting = *policy;
    RadixTree tree(pool, std::move(policy));
    const std::vector<TokenId> a{1, 2, 3, 4, 5};
    const std::vector<TokenId> b{9, 8, 7};
    const InsertResult in_a = radixkv::testing::cache_tokens(pool, tree, a, 0);
    radixkv::testing::cache_tokens(pool, tree, b, 0);  // a is the least recent
    const std::vector<PageId> a_pages(in_a.node->page_ids().begin(), in_a.node->page_ids().end());
    std::vector<PageId> evicted;
    counting.asked = 0;
    CHECK(tree.evict_pages(3, &evicted) == 3);
    CHECK(evicted == std::vector<PageId>{a_pages[4], a_pages[3], a_pages[2]});
    CHECK(counting.asked == (stays ? 1 : 3));
    // The rest of a, then b's tail: a run ends with its leaf.
    CHECK(tree.evict_pages(3, &evicted) == 3);
    CHECK(tree.peek(0, a) == 0);
    CHECK(tree.peek(0, b) == 2);
    CHECK(counting.asked == (stays ? 3 : 6));
    tree.verify();
  }
}
