// Tests that kill mutants of scripts/mutate.sh that no other test caught: the page pool.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "kv_store/page_pool.h"

using namespace radixkv;

TEST_CASE("pool: one release at a time frees a page only with its last reference") {
  // Mutant pool-free-at-one: a page back on the free list while a holder still has it.
  PagePool pool(KvLayout{1, 1, 8, 2, 4}, 4);
  std::vector<PageId> held;
  REQUIRE(pool.allocate(1, held));
  const PageId page = held[0];
  pool.retain(page);
  pool.retain(page);
  for (uint32_t left = 2; left >= 1; --left) {
    pool.release(page);
    CHECK(pool.refcount(page) == left);
    CHECK(pool.free_pages() == 3);
  }
  pool.release(page);
  CHECK(pool.refcount(page) == 0);
  CHECK(pool.free_pages() == 4);

  // Every page is on the free list exactly once: all four come back, each once.
  std::vector<PageId> all;
  REQUIRE(pool.allocate(4, all));
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(pool.free_pages() == 0);
}
