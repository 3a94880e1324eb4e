#include <doctest/doctest.h>

#include "tests/cache_fixture.h"

using namespace radixkv;
using radixkv::testing::CacheFixture;
using radixkv::testing::iota_tokens;

TEST_CASE("page tokens 0 is refused, naming the field") {
  CHECK_THROWS_WITH_AS(PagePool(KvLayout{1, 1, 1, 2, 0}, 4), doctest::Contains("page_tokens"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PagePool(KvLayout{1, 1, 1, 2, 4}, 0), doctest::Contains("capacity"),
                       std::invalid_argument);
}

TEST_CASE("a budget below one page is refused") {
  CHECK_THROWS_WITH_AS(CacheBudget({100, 0.9, 0.8}, 4096), doctest::Contains("below one page"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(CacheBudget({1 << 20, 0.5, 0.8}, 4096), doctest::Contains("low watermark"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(CacheBudget({1 << 20, 1.5, 0.8}, 4096), doctest::Contains("high watermark"),
                       std::invalid_argument);
}

TEST_CASE("unlock of an unlocked node is an error and changes nothing") {
  CacheFixture f(2);
  f.cache(iota_tokens(6));
  MatchResult m = f.tree.match(0, iota_tokens(6));
  CHECK_THROWS_WITH_AS(f.tree.unlock(m.node), doctest::Contains("not locked"), std::logic_error);
  f.tree.lock(m.node);
  f.tree.unlock(m.node);
  CHECK_THROWS_AS(f.tree.unlock(m.node), std::logic_error);
  CHECK(f.tree.protected_pages() == 0);
  f.check();
}

TEST_CASE("insert with the wrong number of pages, or foreign or free pages, changes nothing") {
  CacheFixture f(2, 16);
  f.cache(iota_tokens(4));
  std::vector<PageId> pages;
  REQUIRE(f.pool.allocate(3, pages));
  const auto key = iota_tokens(6, 50);
  CHECK_THROWS_WITH_AS(f.tree.insert(0, key, std::span(pages).first(2)),
                       doctest::Contains("3 whole pages"), std::invalid_argument);
  std::vector<PageId> foreign{pages[0], 999, pages[2]};
  CHECK_THROWS_WITH_AS(f.tree.insert(0, key, foreign), doctest::Contains("not in the pool"),
                       std::invalid_argument);
  std::vector<PageId> twice{pages[0], pages[1], pages[0]};
  CHECK_THROWS_WITH_AS(f.tree.insert(0, key, twice), doctest::Contains("given twice"),
                       std::invalid_argument);
  std::vector<PageId> indexed;
  f.tree.match(0, iota_tokens(4), &indexed);
  std::vector<PageId> stolen{pages[0], indexed[0], pages[2]};
  CHECK_THROWS_WITH_AS(f.tree.insert(0, key, stolen), doctest::Contains("already indexed"),
                       std::invalid_argument);
  f.pool.release(pages[1]);
  CHECK_THROWS_WITH_AS(f.tree.insert(0, key, pages), doctest::Contains("is free"),
                       std::invalid_argument);
  CHECK(f.tree.peek(0, key) == 0);
  f.check({{pages[0], pages[2]}});
}

TEST_CASE("release or retain of a free page is an error naming the page") {
  PagePool pool(KvLayout{1, 1, 1, 2, 1}, 4);
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(1, pages));
  pool.release(pages[0]);
  CHECK_THROWS_WITH_AS(pool.release(pages[0]), doctest::Contains("is free"), std::logic_error);
  CHECK_THROWS_WITH_AS(pool.retain(3), doctest::Contains("page 3"), std::logic_error);
  CHECK_THROWS_WITH_AS(pool.release(17), doctest::Contains("not in this pool"), std::logic_error);
  CHECK(pool.free_pages() == 4);
}
