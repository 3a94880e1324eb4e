// The host tier in the radix tree, case by case: write-back on device eviction, host eviction,
// loading a host run back, insert over host-only pages, write-through and its selective form,
// pages that leave the trie, splits across the device/host boundary, and bad input.
#include <doctest/doctest.h>

#include "tests/tier_fixture.h"

using namespace radixkv;
using radixkv::testing::iota_tokens;
using radixkv::testing::TierFixture;
using radixkv::testing::TierOptions;

namespace {

std::vector<TokenId> tokens(std::initializer_list<TokenId> list) { return list; }

}  // namespace

TEST_CASE("write-back: device eviction moves tail pages to the host, and match reports both runs") {
  TierFixture f(1);
  const auto a = iota_tokens(4);
  f.cache(a);
  CHECK(f.tree.cached_pages() == 4);
  CHECK(f.tree.evict_pages(2) == 2);  // pages 2 and 3 go to the host
  f.check();
  CHECK(f.tree.cached_pages() == 2);
  CHECK(f.tree.host_cached_pages() == 2);
  CHECK(f.tree.stats().written_pages == 2);
  CHECK(f.tree.stats().evicted_pages == 2);
  CHECK(f.pool.free_pages() == f.pool.capacity_pages() - 2);
  CHECK(f.tree.peek(0, a) == 4);  // still all cached
  std::vector<PageId> device;
  const MatchResult m = f.tree.match(0, a, &device);
  CHECK(m.tokens == 4);
  CHECK(m.device_tokens == 2);
  CHECK(m.host_tokens() == 2);
  CHECK(device.size() == 2);  // only the device run's ids
  CHECK(m.node->device_pages() == 2);
  CHECK(m.node->num_pages() == 4);
  CHECK(m.node->host_page(2) != kInvalidPage);
  CHECK(m.node->host_page(3) != kInvalidPage);
  CHECK(m.node->host_page(0) == kInvalidPage);  // write-back keeps one copy
  CHECK(f.tree.dump().find(" h") != std::string::npos);
  f.check();
}

TEST_CASE("a node whose pages all went to the host lets its parent become the device tail") {
  TierFixture f(1);
  f.cache(tokens({1, 2}));
  f.cache(tokens({1, 3}));  // [1] with children [2] and [3]
  f.tree.match(0, tokens({1, 3}));
  CHECK(f.tree.evict_pages(1) == 1);  // [2] (LRU) to the host
  f.check();
  CHECK(f.tree.evict_pages(1) == 1);  // [3] to the host
  f.check();
  // [1] has no child on the device now: it is the next device victim, although it has children.
  CHECK(f.tree.evictable_leaves() == 1);
  CHECK(f.tree.evict_pages(1) == 1);
  f.check();
  CHECK(f.tree.cached_pages() == 0);
  CHECK(f.tree.host_cached_pages() == 3);
  const MatchResult m = f.tree.match(0, tokens({1, 2}));
  CHECK(m.tokens == 2);
  CHECK(m.device_tokens == 0);
}

TEST_CASE("the host evicts its LRU leaf tail to make room, and pages leave the trie") {
  TierOptions o;
  o.host_pages = 3;
  TierFixture f(1, o);
  f.cache(tokens({1, 2, 3}));         // t1
  f.cache(tokens({7, 8}));            // t2
  CHECK(f.tree.evict_pages(3) == 3);  // [1 2 3] to the host (oldest first, from the tail)
  f.check();
  CHECK(f.tree.host_cached_pages() == 3);
  // [7 8] goes to the host too: the host drops [1 2 3]'s tail pages first (older).
  CHECK(f.tree.evict_pages(2) == 2);
  f.check();
  CHECK(f.tree.host_cached_pages() == 3);
  CHECK(f.tree.stats().host_evicted_pages == 2);
  CHECK(f.tree.peek(0, tokens({1, 2, 3})) == 1);
  CHECK(f.tree.peek(0, tokens({7, 8})) == 2);
  CHECK(f.tree.cached_pages() == 0);
  CHECK(f.host.free_pages() == 0);
}

TEST_CASE("loading a host run: device pages of the trie at once, host copies freed when done") {
  TierOptions o;
  o.deferred = true;
  TierFixture f(1, o);
  const auto a = iota_tokens(5);
  f.cache(a);
  CHECK(f.tree.evict_pages(3) == 3);
  f.copier.wait(f.copier.issued());
  f.check();
  std::vector<PageId> held;
  const auto [m, ticket] = f.admit(a, held);
  CHECK(m.tokens == 5);
  CHECK(m.device_tokens == 2);
  CHECK(ticket != 0);
  CHECK_FALSE(f.tree.copy_done(ticket));
  CHECK(held.size() == 5);
  // The trie's pages are the block table's now, all on the device.
  CHECK(m.node->device_pages() == 5);
  CHECK(f.tree.cached_pages() == 5);
  // Write-back: the host copies left the trie, and are held by the copy until it is done.
  CHECK(f.tree.host_cached_pages() == 0);
  CHECK(f.tree.host_in_flight_pages() == 3);
  CHECK(f.tree.pending_load(m.node) == ticket);
  f.check({held});
  CHECK(f.tree.retire_copies() == 0);
  f.copier.wait(ticket);
  CHECK(f.tree.retire_copies() == 3);
  CHECK(f.tree.pending_load(m.node) == 0);
  CHECK(f.host.free_pages() == f.host.capacity_pages());
  CHECK(f.tree.stats().loaded_pages == 3);
  f.check({held});
  f.tree.unlock(m.node);
  f.pool.release(held);
  f.check();
}

TEST_CASE(
    "write-through: pages are copied when cached, keep their copy, and are not host-evicted") {
  TierOptions o;
  o.write = "write_through";
  o.host_pages = 4;
  TierFixture f(1, o);
  f.cache(tokens({1, 2, 3}));
  f.check();
  CHECK(f.tree.host_cached_pages() == 3);  // backups
  CHECK(f.tree.stats().written_pages == 3);
  CHECK(f.tree.host_policy()->size() == 0);  // backups are not host-evictable
  // Eviction from the device just drops the device copy: nothing is written again.
  CHECK(f.tree.evict_pages(2) == 2);
  CHECK(f.tree.stats().written_pages == 3);
  f.check();
  // A load keeps the host copies.
  std::vector<PageId> held;
  const auto [m, ticket] = f.admit(tokens({1, 2, 3}), held);
  CHECK(m.host_tokens() == 2);
  CHECK(f.tree.host_cached_pages() == 3);
  CHECK(f.tree.host_in_flight_pages() == 0);
  f.check({held});
  f.tree.unlock(m.node);
  f.pool.release(held);
  // The host has one page left: a new 2-page prompt gets one copy, the other is skipped.
  f.cache(tokens({5, 6}));
  CHECK(f.tree.host_cached_pages() == 4);
  CHECK(f.tree.stats().skipped_writes == 1);
  f.check();
  // Under write-through a device page without a copy leaves the trie when evicted.
  f.tree.match(0, tokens({1, 2, 3}));  // [5 6] is the LRU device leaf
  CHECK(f.tree.evict_pages(1) == 1);
  CHECK(f.tree.stats().dropped_pages == 1);
  CHECK(f.tree.peek(0, tokens({5, 6})) == 1);
  f.check();
}

TEST_CASE("write_through_selective copies a node once a lock finds it hit N times") {
  TierOptions o;
  o.write = "write_through_selective:hits=3";
  TierFixture f(1, o);
  f.cache(tokens({1, 2}));  // hits 1
  CHECK(f.tree.host_cached_pages() == 0);
  MatchResult m = f.tree.match(0, tokens({1, 2}));  // hits 2
  f.tree.lock(m.node);
  f.tree.unlock(m.node);
  CHECK(f.tree.host_cached_pages() == 0);
  m = f.tree.match(0, tokens({1, 2}));     // hits 3
  CHECK(f.tree.host_cached_pages() == 0);  // a match alone copies nothing
  f.tree.lock(m.node);
  CHECK(f.tree.host_cached_pages() == 2);
  CHECK(f.tree.stats().written_pages == 2);
  f.tree.unlock(m.node);
  f.check();
}

TEST_CASE("insert over host-only pages takes the caller's pages as their device pages") {
  for (const char* write : {"write_back", "write_through"}) {
    CAPTURE(write);
    TierOptions o;
    o.write = write;
    TierFixture f(2, o);
    const auto a = iota_tokens(8);  // 4 pages
    f.cache(a);
    f.tree.evict_pages(3);
    f.check();
    // A longer key computed by a request that never loaded the host run.
    auto longer = iota_tokens(12);
    std::vector<PageId> pages;
    REQUIRE(f.pool.allocate(6, pages));
    const InsertResult r = f.tree.insert(0, longer, pages);
    CHECK(r.cached_tokens == 8);
    CHECK(r.new_pages == 5);  // three host-only pages got device pages, two are new
    std::vector<PageId> device;
    const MatchResult m = f.tree.match(0, longer, &device);
    CHECK(m.device_tokens == 12);
    CHECK(device[0] != pages[0]);  // the device page that was cached stays canonical
    CHECK(std::equal(device.begin() + 1, device.end(), pages.begin() + 1));
    const bool back = std::string(write) == "write_back";
    CHECK(f.tree.host_cached_pages() == (back ? 0u : 6u));
    f.check({pages});
    f.pool.release(pages);
    f.check();
  }
}

TEST_CASE("a device page that cannot go to the host leaves the trie with the host pages below it") {
  TierOptions o;
  o.write = "write_through";
  o.host_pages = 2;
  TierFixture f(1, o);
  f.cache(tokens({9, 9}));  // both copied: the host is full of backups, which it cannot evict
  f.cache(tokens({1}));     // no room: its copy is skipped
  CHECK(f.tree.stats().skipped_writes == 1);
  f.tree.match(0, tokens({1}));
  CHECK(f.tree.evict_pages(2) == 2);  // [9 9] leaves the device; its host copies stay
  CHECK(f.tree.host_policy()->size() == 1);
  f.cache(tokens({1, 2}));  // [2]'s copy makes the host evict [9 9]'s tail
  CHECK(f.tree.stats().host_evicted_pages == 1);
  CHECK(f.tree.evict_pages(1) == 1);  // [2] leaves the device, its copy stays
  f.check();
  // [1] is the device tail now, without a copy, with host-only [2] below it: both leave the trie.
  CHECK(f.tree.evict_pages(1) == 1);
  CHECK(f.tree.stats().dropped_pages == 2);
  CHECK(f.tree.peek(0, tokens({1, 2})) == 0);
  CHECK(f.tree.peek(0, tokens({9, 9})) == 1);
  f.check();
}

TEST_CASE("a split at the device/host boundary keeps every page on its tier") {
  TierFixture f(1);
  f.cache(iota_tokens(6));
  f.tree.evict_pages(3);  // [0 1 2 | h h h]
  // Matches that end inside the edge split it: in the host part, and at the boundary.
  auto key = iota_tokens(5);
  MatchResult m = f.tree.match(0, key);
  CHECK(m.tokens == 5);
  CHECK(m.device_tokens == 3);
  f.check();
  m = f.tree.match(0, iota_tokens(2));
  CHECK(m.tokens == 2);
  CHECK(m.device_tokens == 2);
  f.check();
  m = f.tree.match(0, iota_tokens(3));
  CHECK(m.node->device_pages() == 1);
  CHECK(m.node->num_pages() == 1);
  f.check();
  CHECK(f.tree.stats().splits == 3);
  CHECK(f.tree.peek(0, iota_tokens(6)) == 6);
}

TEST_CASE("erase_leaf and clear release both tiers") {
  TierFixture f(1);
  f.cache(iota_tokens(4));
  f.cache(tokens({9, 9}));
  f.tree.evict_pages(3);
  f.check();
  MatchResult m = f.tree.match(0, iota_tokens(4));
  f.tree.erase_leaf(m.node);
  f.check();
  CHECK(f.tree.peek(0, iota_tokens(4)) == 0);
  f.tree.clear();
  f.check();
  CHECK(f.tree.cached_pages() == 0);
  CHECK(f.tree.host_cached_pages() == 0);
  CHECK(f.pool.free_pages() == f.pool.capacity_pages());
  CHECK(f.host.free_pages() == f.host.capacity_pages());
}

TEST_CASE("a host tier that does not fit is refused, naming why, and changes nothing") {
  const KvLayout layout{1, 1, 4, 2, 4};
  PagePool device(layout, 8);
  PagePool other_page_size(KvLayout{1, 1, 4, 2, 8}, 8);
  PagePool other_shape(KvLayout{2, 1, 4, 2, 4}, 8);
  PagePool host(layout, 8);
  radixkv::testing::TestCopier copier;
  RadixTree tree(device, make_policy("lru"));
  const auto setup = [&](PagePool* pool) {
    HostTierSetup s;
    s.pool = pool;
    s.copier = &copier;
    s.policy = make_policy("lru");
    return s;
  };
  CHECK_THROWS_WITH_AS(tree.add_host_tier(setup(&other_page_size)), doctest::Contains("layout"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(tree.add_host_tier(setup(&other_shape)), doctest::Contains("layout"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(tree.add_host_tier(setup(&device)), doctest::Contains("another pool"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(tree.add_host_tier(setup(nullptr)), doctest::Contains("no host pool"),
                       std::invalid_argument);
  HostTierSetup no_copier = setup(&host);
  no_copier.copier = nullptr;
  CHECK_THROWS_WITH_AS(tree.add_host_tier(std::move(no_copier)), doctest::Contains("copier"),
                       std::invalid_argument);
  CHECK_FALSE(tree.has_host_tier());
  CHECK_THROWS_WITH_AS(WritePolicy::parse("write_around"),
                       doctest::Contains("unknown write policy 'write_around' (known: write_back"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(WritePolicy::parse("write_through_selective:hits=0"),
                       doctest::Contains("at least 1"), std::invalid_argument);
  CHECK_THROWS_AS(WritePolicy::parse("write_back:hits=2"), std::invalid_argument);
  CHECK(WritePolicy::parse("write_through_selective:hits=5").hits == 5);
  // Only on an empty tree.
  std::vector<PageId> pages;
  REQUIRE(device.allocate(1, pages));
  tree.insert(0, iota_tokens(4), pages);
  device.release(pages);
  CHECK_THROWS_WITH_AS(tree.add_host_tier(setup(&host)), doctest::Contains("empty tree"),
                       std::invalid_argument);
  CHECK_FALSE(tree.has_host_tier());
  tree.verify();
}

TEST_CASE("load refuses an unlocked end or the wrong pages, changing nothing") {
  TierFixture f(1);
  f.cache(iota_tokens(4));
  f.tree.evict_pages(2);
  MatchResult m = f.tree.match(0, iota_tokens(4));
  std::vector<PageId> pages;
  REQUIRE(f.pool.allocate(3, pages));
  CHECK_THROWS_WITH_AS(f.tree.load(m.node, std::span<const PageId>(pages).first(2)),
                       doctest::Contains("locked"), std::invalid_argument);
  f.tree.lock(m.node);
  CHECK_THROWS_WITH_AS(f.tree.load(m.node, pages), doctest::Contains("3 device pages"),
                       std::invalid_argument);
  const std::vector<PageId> twice{pages[0], pages[0]};
  CHECK_THROWS_WITH_AS(f.tree.load(m.node, twice), doctest::Contains("given twice"),
                       std::invalid_argument);
  // (No verify() here: between the lock and the load the locked path is not wholly on the device.)
  CHECK(f.tree.host_cached_pages() == 2);
  CHECK(f.tree.cached_pages() == 2);
  for (PageId page : pages) CHECK_FALSE(f.tree.indexes_page(page));
  f.tree.load(m.node, std::span<const PageId>(pages).first(2));
  f.check({pages});
  f.tree.unlock(m.node);
  f.pool.release(pages);
  f.check();
}
