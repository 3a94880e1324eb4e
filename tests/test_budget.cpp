#include <doctest/doctest.h>

#include "tests/cache_fixture.h"

using namespace radixkv;
using radixkv::testing::CacheFixture;
using radixkv::testing::iota_tokens;

TEST_CASE("watermarks: above high, evict down to low") {
  CacheFixture f(1, 100);
  const uint64_t page = f.pool.bytes_per_page();
  BudgetedAllocator alloc(f.pool, f.evictor, CacheBudget({20 * page, 0.9, 0.55}, page));
  CHECK(alloc.budget().high_pages() == 18);
  CHECK(alloc.budget().low_pages() == 11);
  for (TokenId conv = 0; conv < 6; ++conv) f.cache(iota_tokens(3, conv * 100));  // 18 pages
  CHECK(alloc.enforce_watermarks() == 0);
  f.cache(iota_tokens(1, 1000));  // 19 > 18
  CHECK(alloc.enforce_watermarks() == 8);
  CHECK(f.tree.cached_pages() == 11);
  // The oldest conversations went first: 0, 1 and all but one page of 2.
  CHECK(f.tree.peek(0, iota_tokens(3, 0)) == 0);
  CHECK(f.tree.peek(0, iota_tokens(3, 100)) == 0);
  CHECK(f.tree.peek(0, iota_tokens(3, 200)) == 1);
  CHECK(f.tree.peek(0, iota_tokens(3, 300)) == 3);
  f.check();
}

TEST_CASE("allocation evicts just enough, then fails cleanly when nothing is evictable") {
  CacheFixture f(2, 10);
  const uint64_t page = f.pool.bytes_per_page();
  BudgetedAllocator alloc(f.pool, f.evictor, CacheBudget({10 * page, 1.0, 1.0}, page));
  f.cache(iota_tokens(8, 0));    // 4 pages
  f.cache(iota_tokens(8, 100));  // 4 pages
  std::vector<PageId> seq;
  AllocResult r = alloc.allocate(3, seq);
  CHECK(r.ok());
  CHECK(r.evicted_pages == 1);  // 2 were free: one page evicted, not a whole leaf
  CHECK(f.tree.cached_pages() == 7);
  f.check({seq});

  MatchResult m = f.tree.match(0, iota_tokens(8, 100));
  f.tree.lock(m.node);  // pins 4 pages; 3 more are evictable
  std::vector<PageId> more;
  r = alloc.allocate(5, more);
  CHECK_FALSE(r.ok());
  CHECK(r.status == AllocStatus::kNoSpace);
  CHECK(r.evicted_pages == 3);
  CHECK(r.short_pages == 2);
  CHECK(more.empty());
  f.check({seq});
  f.tree.unlock(m.node);
  f.pool.release(seq);
  f.check();
}
