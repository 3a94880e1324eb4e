// PrefixCacheRuntime with a host tier: admit reports the device and host runs, loads the host run
// into the block table and hands out a ticket that pages still loading share; refusals leak
// nothing in either tier; loading sequences may end before their load does; bad configuration is
// refused by name.
#include <doctest/doctest.h>

#include <algorithm>

#include "runtime/prefix_cache_runtime.h"
#include "tests/cache_fixture.h"
#include "tests/test_copier.h"
#include "tests/tier_driver.h"

using namespace radixkv;
using radixkv::testing::iota_tokens;
using radixkv::testing::TestCopier;

namespace {

struct TieredRuntime {
  explicit TieredRuntime(uint32_t page_tokens, uint32_t device_pages = 64, uint32_t host_pages = 64,
                         std::string write = "write_back", bool deferred = true)
      : layout{1, 1, 4, 2, page_tokens},
        pool(layout, device_pages),
        host(layout, host_pages),
        copier(deferred),
        runtime(pool, {.high_watermark = 1.0, .low_watermark = 1.0}, tiers(std::move(write))) {}

  TierConfig tiers(std::string write) {
    TierConfig c;
    c.host.pool = &host;
    c.host.copier = &copier;
    c.host.write_policy = std::move(write);
    return c;
  }

  // Admits, waits for any load, commits the whole prompt and finishes.
  AdmitResult serve(const std::vector<TokenId>& prompt, Namespace ns = 0) {
    const AdmitResult r = runtime.admit({1, ns, prompt});
    REQUIRE(r.ok());
    runtime.wait_load(r.load_ticket);
    runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
    runtime.finish(r.seq);
    runtime.check_accounting();
    return r;
  }

  KvLayout layout;
  PagePool pool;
  PagePool host;
  TestCopier copier;
  PrefixCacheRuntime runtime;
};

}  // namespace

TEST_CASE("admit loads the host run: offset = device + host hits, a ticket, then the pages") {
  for (uint32_t P : {2u, 4u}) {
    CAPTURE(P);
    TieredRuntime f(P);
    const auto prompt = iota_tokens(4 * P + 1);  // four full pages and one token
    f.serve(prompt);
    CHECK(f.runtime.tree().cached_pages() == 4);
    CHECK(f.runtime.evict(3) == 3);  // pages 1..3 to the host
    f.copier.wait(f.copier.issued());
    f.runtime.check_accounting();
    CHECK(f.runtime.tree().host_cached_pages() == 3);

    const AdmitResult a = f.runtime.admit({2, 0, prompt});
    REQUIRE(a.ok());
    CHECK(a.reused_tokens == 4 * P);
    CHECK(a.position_offset == 4 * P);
    CHECK(a.device_hit_tokens == P);
    CHECK(a.host_hit_tokens == 3 * P);
    CHECK(a.load_ticket != 0);
    CHECK_FALSE(f.runtime.load_done(a.load_ticket));
    REQUIRE(a.block_table.size() == 5);
    // The block table's loaded pages are the trie's device pages already.
    for (uint32_t i = 0; i < 4; ++i) CHECK(f.runtime.tree().indexes_page(a.block_table[i]));
    CHECK_FALSE(f.runtime.tree().indexes_page(a.block_table[4]));
    CHECK(f.runtime.view(a.seq).load_ticket == a.load_ticket);
    CHECK(f.runtime.tree().host_in_flight_pages() == 3);  // write-back: freed when done
    CHECK(f.runtime.check_accounting() == 1);
    // A second request over the same pages while they load shares the ticket.
    const AdmitResult b = f.runtime.admit({3, 0, prompt});
    REQUIRE(b.ok());
    CHECK(b.device_hit_tokens == 4 * P);
    CHECK(b.host_hit_tokens == 0);
    CHECK(b.load_ticket == a.load_ticket);
    f.runtime.wait_load(a.load_ticket);
    CHECK(f.runtime.load_done(a.load_ticket));
    CHECK(f.runtime.tree().host_in_flight_pages() == 0);
    CHECK(f.runtime.tree().host_cached_pages() == 0);
    CHECK(f.host.free_pages() == f.host.capacity_pages());
    f.runtime.check_accounting();
    // Once loaded, nobody waits any more.
    const AdmitResult c = f.runtime.admit({4, 0, prompt});
    REQUIRE(c.ok());
    CHECK(c.load_ticket == 0);
    for (const AdmitResult* r : {&a, &b, &c}) {
      f.runtime.commit(r->seq, static_cast<uint32_t>(prompt.size()));
      f.runtime.finish(r->seq);
    }
    CHECK(f.runtime.check_accounting() == 0);
    const RuntimeStats& stats = f.runtime.stats();
    CHECK(stats.host_hit_tokens == 3 * P);
    CHECK(stats.device_hit_tokens == P + 8 * P);
    CHECK(stats.reused_tokens == stats.device_hit_tokens + stats.host_hit_tokens);
  }
}

TEST_CASE("write-through: a load keeps the host copies") {
  TieredRuntime f(2, 64, 64, "write_through", false);
  const auto prompt = iota_tokens(9);
  f.serve(prompt);
  CHECK(f.runtime.tree().host_cached_pages() == 4);
  f.runtime.evict(4);
  CHECK(f.runtime.tree().host_cached_pages() == 4);
  CHECK(f.runtime.tree().cached_pages() == 0);
  const AdmitResult a = f.serve(prompt);
  CHECK(a.host_hit_tokens == 8);
  CHECK(f.runtime.tree().host_cached_pages() == 4);
  CHECK(f.runtime.tree().cached_pages() == 4);
  CHECK(f.runtime.check_accounting() == 0);
}

TEST_CASE("a refused admit with a host run leaks nothing in either tier") {
  // Eight device pages; a live sequence pins seven of them.
  TieredRuntime f(1, 8, 16, "write_back", false);
  const auto cached = iota_tokens(5);
  f.serve(cached);     // five pages cached
  f.runtime.evict(5);  // all on the host
  const auto other = iota_tokens(7, 100);
  const AdmitResult hog = f.runtime.admit({9, 0, other});
  REQUIRE(hog.ok());
  f.runtime.commit(hog.seq, 7);  // seven pages cached and pinned
  const uint32_t free_before = f.pool.free_pages();
  const uint64_t host_before = f.runtime.tree().host_cached_pages();
  // The cached prompt needs 4 device pages for its host run (the cut) and 1 more: 5 > 1 free.
  const AdmitResult r = f.runtime.admit({10, 0, cached});
  CHECK(r.status == RuntimeStatus::kNoSpace);
  CHECK(f.pool.free_pages() == free_before);
  CHECK(f.runtime.tree().host_cached_pages() == host_before);
  CHECK(f.runtime.tree().host_pinned_pages() == 0);
  CHECK(f.runtime.tree().host_in_flight_pages() == 0);
  CHECK(f.runtime.check_accounting() == 0);
  f.runtime.finish(hog.seq);
  // With the pages free again the same admit works and loads the run.
  const AdmitResult again = f.serve(cached);
  CHECK(again.host_hit_tokens == 4);
  CHECK(f.runtime.check_accounting() == 0);
}

TEST_CASE(
    "a sequence may end before its load, and its pages are not reused until the copy is done") {
  TieredRuntime f(2);  // deferred copies: TestCopier checks every page is held when a copy runs
  const auto prompt = iota_tokens(9);
  f.serve(prompt);
  f.runtime.evict(4);
  f.copier.wait(f.copier.issued());
  const AdmitResult a = f.runtime.admit({1, 0, prompt});
  REQUIRE(a.ok());
  REQUIRE_FALSE(f.runtime.load_done(a.load_ticket));
  f.runtime.abort(a.seq);
  f.runtime.check_accounting();
  // Evicting the loading pages waits for the load first; under write-back they go back to the
  // host, in copies that run after it.
  CHECK(f.runtime.evict(100) == 4);
  CHECK(f.runtime.load_done(a.load_ticket));
  CHECK(f.runtime.check_accounting() == 0);
  CHECK(f.runtime.tree().host_cached_pages() == 4);
  CHECK(f.copier.pending() == 0);
}

TEST_CASE("a host tier's configuration errors name the host tier and what is wrong") {
  const KvLayout layout{1, 1, 4, 2, 4};
  PagePool pool(layout, 8);
  PagePool host(layout, 8);
  PagePool wrong(KvLayout{1, 1, 8, 2, 4}, 8);
  TestCopier copier;
  TierConfig c;
  c.host.pool = &host;
  c.host.copier = &copier;
  c.host.write_policy = "write_sometimes";
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(pool, {}, c),
                       doctest::Contains("host tier: unknown write policy 'write_sometimes'"),
                       std::invalid_argument);
  c.host.write_policy = "write_back";
  c.host.policy = "lirs";
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(pool, {}, c),
                       doctest::Contains("host tier: unknown eviction policy 'lirs'"),
                       std::invalid_argument);
  c.host.policy = "lru";
  c.host.cache_bytes = 1;
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(pool, {}, c), doctest::Contains("below one page"),
                       std::invalid_argument);
  c.host.cache_bytes = 0;
  c.host.pool = &wrong;
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(pool, {}, c), doctest::Contains("layout"),
                       std::invalid_argument);
  // Without a copier the runtime makes its own, which must serve the two pools.
  c.host.copier = nullptr;
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(pool, {}, c), doctest::Contains("host tier: "),
                       std::invalid_argument);
  c.host.pool = &host;
  PrefixCacheRuntime made(pool, {}, c);
  CHECK(made.tree().has_host_tier());
  // Nothing was taken from the pools.
  CHECK(pool.free_pages() == 8);
  CHECK(host.free_pages() == 8);
}

TEST_CASE(
    "issue 28: a host pool serves one runtime, and another runtime's host or device pool is "
    "refused") {
  const KvLayout layout{1, 1, 4, 2, 2};
  PagePool device_a(layout, 16), device_b(layout, 16), host(layout, 16);
  TestCopier copier(false);
  const auto tiers_over = [&](PagePool& host_pool) {
    TierConfig c;
    c.host.pool = &host_pool;
    c.host.copier = &copier;
    return c;
  };
  const auto serve = [](PrefixCacheRuntime& runtime, const std::vector<TokenId>& prompt) {
    const AdmitResult r = runtime.admit({1, 0, prompt});
    REQUIRE(r.ok());
    runtime.wait_load(r.load_ticket);
    runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
    runtime.finish(r.seq);
  };
  {
    PrefixCacheRuntime a(device_a, {}, tiers_over(host));
    serve(a, iota_tokens(9));
    a.evict(4);  // write-back: the evicted pages go to the host pool
    REQUIRE(a.tree().host_cached_pages() == 4);
    const auto refused = [&](PagePool& device, PagePool& host_pool, const char* message) {
      CHECK_THROWS_WITH_AS(PrefixCacheRuntime(device, {}, tiers_over(host_pool)),
                           doctest::Contains(message), std::logic_error);
    };
    // A's host pool as B's host pool, or as B's device pool; A's device pool as B's host pool.
    refused(device_b, host,
            "PrefixCacheRuntime's host tier: its PagePool already serves another runtime "
            "(claimed by PrefixCacheRuntime's host tier)");
    refused(host, device_b,
            "PrefixCacheRuntime: its PagePool already serves another runtime (claimed by "
            "PrefixCacheRuntime's host tier)");
    refused(device_b, device_a,
            "PrefixCacheRuntime's host tier: its PagePool already serves another runtime "
            "(claimed by PrefixCacheRuntime)");
    // The refusals changed nothing: A still holds what it held, B's device pool is free again.
    CHECK(a.check_accounting() == 0);
    CHECK(a.tree().host_cached_pages() == 4);
    const AdmitResult again = a.admit({2, 0, iota_tokens(9)});
    REQUIRE(again.ok());
    CHECK(again.host_hit_tokens == 8);
    a.wait_load(again.load_ticket);
    a.abort(again.seq);
    CHECK(a.check_accounting() == 0);
    CHECK(device_b.free_pages() == 16);
    PrefixCacheRuntime{device_b};  // unclaimed again
  }
  // A host pool with pages held by someone is refused; once A is gone its pools serve B.
  std::vector<PageId> held;
  REQUIRE(host.allocate(1, held));
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(device_b, {}, tiers_over(host)),
                       doctest::Contains("host tier: 1 of its PagePool's 16 pages are in use"),
                       std::logic_error);
  host.release(held);
  PrefixCacheRuntime b(device_b, {}, tiers_over(host));
  serve(b, iota_tokens(9));
  CHECK(b.check_accounting() == 0);
}

TEST_CASE("tier events without a host tier: the device is the lowest tier, and clear_cache") {
  const KvLayout layout{1, 1, 4, 2, 2};
  PagePool pool(layout, 16);
  radixkv::testing::EventLog log(2, pool, pool);
  TierConfig tiers;
  tiers.events = {&log};
  PrefixCacheRuntime runtime(pool, {}, tiers);
  CHECK(runtime.tree().page_hashes());
  const auto device_hashes = [&] {
    std::vector<PageHash> hashes = runtime.tree().tier_page_hashes(Tier::kDevice);
    std::sort(hashes.begin(), hashes.end());
    return hashes;
  };
  uint64_t calls = 0;
  for (TokenId first : {0, 100, 200, 300}) {
    const auto prompt = iota_tokens(9, first);
    const AdmitResult r = runtime.admit({1, 0, prompt});
    REQUIRE(r.ok());
    runtime.commit(r.seq, 9);
    runtime.finish(r.seq);
    calls += 3;
    CHECK(log.flushes() == calls);
    CHECK(log.sorted(Tier::kDevice) == device_hashes());
  }
  CHECK(runtime.evict(5) == 5);
  ++calls;
  CHECK(log.flushes() == calls);
  CHECK(log.sorted(Tier::kDevice) == device_hashes());
  CHECK(log.droppings() >= 5);  // every evicted page left from the device
  // Every computed page was inserted once (4 pages of each prompt), and nothing else.
  CHECK(log.insertions() == 16);
  CHECK(log.insertions() == runtime.stats().committed_pages);
  CHECK(log.sorted(Tier::kHost).empty());
  const AdmitResult live = runtime.admit({2, 0, iota_tokens(3)});
  CHECK_THROWS_WITH_AS(runtime.clear_cache(), doctest::Contains("live"), std::logic_error);
  runtime.abort(live.seq);
  runtime.clear_cache();
  CHECK(log.sorted(Tier::kDevice).empty());
  CHECK(runtime.tree().cached_pages() == 0);
  CHECK(pool.free_pages() == pool.capacity_pages());
  CHECK(runtime.check_accounting() == 0);
}

TEST_CASE("a caller without sequences loads a host run into pages it holds (runtime::load)") {
  // The SGLang facade's HiCache path (python/src/slot_trie.h): match, lock the end, load, unlock.
  constexpr uint32_t P = 2;
  TieredRuntime f(P);
  const std::vector<TokenId> key = iota_tokens(5 * P, 100);
  std::vector<PageId> held;
  REQUIRE(f.pool.allocate(5, held));
  f.runtime.insert(0, key, held);
  f.pool.release(held);
  CHECK(f.runtime.evict(3) == 3);  // the tail: three pages to the host
  f.runtime.wait_load(f.copier.issued());
  const MatchResult found = f.runtime.match(0, key, nullptr);
  CHECK(found.tokens == 5 * P);
  CHECK(found.device_tokens == 2 * P);
  f.runtime.lock(found.node);
  std::vector<PageId> pages;
  REQUIRE(f.pool.allocate(2, pages));
  // The wrong number of pages is refused and changes nothing.
  CHECK_THROWS_AS(f.runtime.load(found.node, pages), std::invalid_argument);
  CHECK(f.runtime.tree().host_cached_pages() == 3);
  REQUIRE(f.pool.allocate(1, pages));
  const LoadTicket ticket = f.runtime.load(found.node, pages);
  CHECK(ticket != 0);
  f.runtime.wait_load(ticket);
  f.pool.release(pages);  // the tree holds its own references
  f.runtime.unlock(found.node);
  std::vector<PageId> device;
  const MatchResult again = f.runtime.match(0, key, &device);
  CHECK(again.device_tokens == 5 * P);
  CHECK(std::vector<PageId>(device.end() - 3, device.end()) == pages);
  CHECK(f.runtime.tree().host_cached_pages() == 0);  // write-back: the host copies left
  f.runtime.check_accounting();
  f.runtime.tree().verify();
}
