#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "kv_store/page_pool.h"

using namespace radixkv;

TEST_CASE("presets have their published bytes per token") {
  CHECK(KvLayout::preset("llama-3-8b", 16).bytes_per_token() == 128 * 1024);
  CHECK(KvLayout::preset("llama-3-70b", 16).bytes_per_token() == 320 * 1024);
  CHECK(KvLayout::preset("qwen2.5-7b", 16).bytes_per_token() == 56 * 1024);
  CHECK(KvLayout::preset("mistral-7b", 16).bytes_per_token() == 128 * 1024);
  CHECK(KvLayout::preset("llama-3-8b", 16).bytes_per_page() == 16 * 128 * 1024);
  CHECK_THROWS_WITH_AS(KvLayout::preset("gpt-9", 16), doctest::Contains("llama-3-8b"),
                       std::invalid_argument);
}

TEST_CASE("allocation is all or nothing and refcounts return pages to the free list") {
  PagePool pool(KvLayout{1, 1, 8, 2, 4}, 5);
  std::vector<PageId> a;
  REQUIRE(pool.allocate(3, a));
  CHECK(pool.free_pages() == 2);
  std::vector<PageId> b;
  CHECK_FALSE(pool.allocate(3, b));
  CHECK(b.empty());
  CHECK(pool.free_pages() == 2);
  pool.retain(a[0]);
  CHECK(pool.refcount(a[0]) == 2);
  pool.release(a);
  CHECK(pool.free_pages() == 4);
  CHECK(pool.refcount(a[0]) == 1);
  pool.release(a[0]);
  CHECK(pool.free_pages() == 5);
  CHECK(pool.peak_used_pages() == 3);
}

TEST_CASE("the host backend keeps each page's bytes apart") {
  const KvLayout layout{2, 2, 8, 2, 4};
  PagePool pool(layout, 8, make_host_backend());
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(8, pages));
  for (PageId p : pages) {
    auto bytes = pool.host_bytes(p);
    REQUIRE(bytes.size() == layout.bytes_per_page());
    std::memset(bytes.data(), static_cast<int>(p + 1), bytes.size());
  }
  pool.backend().copy_page(pages[0], pages[5]);
  for (PageId p : pages) {
    const int expected = p == pages[0] ? static_cast<int>(pages[5] + 1) : static_cast<int>(p + 1);
    for (std::byte b : pool.host_bytes(p)) REQUIRE(std::to_integer<int>(b) == expected);
  }
}

TEST_CASE("pages_for_bytes converts budgets and refuses one below a page") {
  const KvLayout layout = KvLayout::preset("llama-3-8b", 16);  // 2 MiB pages
  CHECK(PagePool::pages_for_bytes(layout, 8ull << 30) == 4096);
  CHECK(PagePool::pages_for_bytes(layout, (2ull << 20) + 1) == 1);
  CHECK_THROWS_WITH_AS(PagePool::pages_for_bytes(layout, 1 << 20),
                       doctest::Contains("holds no page"), std::invalid_argument);
}

TEST_CASE("releasing a list is all or nothing, also when a page is listed more often than held") {
  PagePool pool(KvLayout{1, 1, 8, 2, 4}, 4);
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(3, pages));
  pool.retain(pages[1]);  // pages[1] is held twice, the others once
  const std::vector<uint32_t> before{pool.refcount(pages[0]), pool.refcount(pages[1]),
                                     pool.refcount(pages[2])};
  struct BadList {
    std::vector<PageId> pages;
    const char* why;
  };
  const std::vector<BadList> bad_lists = {
      {{pages[0], pages[2], pages[0]}, "listed more often"},            // pages[0] below zero
      {{pages[1], pages[0], pages[1], pages[1]}, "listed more often"},  // held twice, listed 3x
      {{pages[2], pages[1], PageId{17}}, "not in this pool"},           // a bad id, last
  };
  for (const BadList& bad : bad_lists) {
    CAPTURE(bad.why);
    CHECK_THROWS_WITH_AS(pool.release(bad.pages), doctest::Contains(bad.why), std::logic_error);
    CHECK(pool.free_pages() == 1);
    for (int i = 0; i < 3; ++i) CHECK(pool.refcount(pages[i]) == before[i]);
  }
  // Still consistent: a good list (pages[1] twice, as held) frees all three.
  pool.release(std::vector<PageId>{pages[0], pages[1], pages[1], pages[2]});
  CHECK(pool.free_pages() == 4);
  std::vector<PageId> again;
  REQUIRE(pool.allocate(4, again));
  std::sort(again.begin(), again.end());
  CHECK(std::adjacent_find(again.begin(), again.end()) == again.end());  // no page handed out twice
}
