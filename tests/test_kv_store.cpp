#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

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

TEST_CASE(
    "issue 28: a layout whose sizes pass 2^64 bytes is refused, naming the field, never wrapped") {
  // 2 x 2^20 x 2^10 x 2^12 x 2^12 = 2^55 bytes a token: 512 tokens make exactly 2^64, which
  // wrapped to a page of 0 bytes (and 513 tokens to one of 2^55, smaller than a token).
  const KvLayout wraps_to_zero{1u << 20, 1u << 10, 1u << 12, 1u << 12, 512};
  CHECK(wraps_to_zero.bytes_per_token() == uint64_t{1} << 55);
  for (const auto& [layout, field, what] :
       {std::tuple{wraps_to_zero, "at page_tokens", "a page"},
        std::tuple{KvLayout{1u << 20, 1u << 10, 1u << 12, 1u << 12, 513}, "at page_tokens",
                   "a page"},
        // 52.5 PB a token (2 x 48,912,491 x 4,096 x 65,536 x 2 B): 512 of them pass 2^64.
        std::tuple{KvLayout{48'912'491, 4096, 65536, 2, 512}, "at page_tokens", "a page"},
        std::tuple{KvLayout{UINT32_MAX, UINT32_MAX, UINT32_MAX, 1, 1}, "at kv_heads", "a token"}}) {
    CAPTURE(layout.to_string());
    CHECK_THROWS_WITH_AS(layout.validate(), doctest::Contains(field), std::invalid_argument);
    CHECK_THROWS_WITH_AS(layout.validate(), doctest::Contains(what), std::invalid_argument);
    CHECK_THROWS_WITH_AS(layout.bytes_per_page(), doctest::Contains(field), std::invalid_argument);
    CHECK_THROWS_WITH_AS(PagePool(layout, 4), doctest::Contains(field), std::invalid_argument);
    CHECK_THROWS_AS(PagePool::pages_for_bytes(layout, UINT64_MAX), std::invalid_argument);
    CHECK(layout.to_string().find("more than 2^64 B/page") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(
      wraps_to_zero.validate(),
      "KvLayout: a page passes 2^64 bytes at page_tokens (1048576 layers x 1024 "
      "kv_heads x 4096 head_dim x 4096 dtype_bytes x 2 (K and V) x 512 page_tokens)",
      std::invalid_argument);
  // The largest page that fits is taken as it is; a pool of it that would pass 2^64 is refused.
  const KvLayout largest{1u << 20, 1u << 10, 1u << 12, 1u << 12, 511};
  CHECK(largest.bytes_per_page() == (uint64_t{1} << 55) * 511);
  CHECK_NOTHROW(largest.validate());
  CHECK_NOTHROW(PagePool(largest, 1));
  CHECK_THROWS_WITH_AS(PagePool(largest, 2), doctest::Contains("pass 2^64"), std::invalid_argument);
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

TEST_CASE("retaining a list is all or nothing, and a page listed twice gains two references") {
  PagePool pool(KvLayout{1, 1, 8, 2, 4}, 4);
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(3, pages));
  pool.release(pages[2]);  // free now
  const std::vector<std::pair<std::vector<PageId>, const char*>> bad_lists = {
      {{pages[0], pages[1], pages[2]}, "is free"},  // the bad page last: the others undone
      {{pages[1], PageId{17}, pages[0]}, "not in this pool"},
  };
  for (const auto& [list, why] : bad_lists) {
    CAPTURE(why);
    CHECK_THROWS_WITH_AS(pool.retain(list), doctest::Contains(why), std::logic_error);
    CHECK(pool.refcount(pages[0]) == 1);
    CHECK(pool.refcount(pages[1]) == 1);
    CHECK(pool.refcount(pages[2]) == 0);
    CHECK(pool.free_pages() == 2);
  }
  pool.retain(std::vector<PageId>{pages[0], pages[1], pages[0]});
  CHECK(pool.refcount(pages[0]) == 3);
  CHECK(pool.refcount(pages[1]) == 2);
  pool.release(std::vector<PageId>{pages[0], pages[0], pages[0], pages[1], pages[1]});
  CHECK(pool.free_pages() == 4);
}

TEST_CASE("partitions take contiguous ranges of one pool's ids and keep their own free lists") {
  const KvLayout layout{1, 1, 8, 2, 4};
  PagePool pool(layout, 10, make_host_backend());
  PagePool a(pool, 4);
  PagePool b(pool, 3);
  CHECK(a.first_page() == 0);
  CHECK(a.end_page() == 4);
  CHECK(b.first_page() == 4);
  CHECK(b.end_page() == 7);
  // The parent holds every lent page once; what is left is its own.
  CHECK(pool.free_pages() == 3);
  for (PageId p = 0; p < 7; ++p) CHECK(pool.refcount(p) == 1);
  CHECK(pool.refcount(7) == 0);

  // Each allocates only its own ids, first id first, and knows no other.
  std::vector<PageId> from_a, from_b;
  REQUIRE(a.allocate(4, from_a));
  REQUIRE(b.allocate(2, from_b));
  CHECK(from_a == std::vector<PageId>{0, 1, 2, 3});
  CHECK(from_b == std::vector<PageId>{4, 5});
  CHECK_FALSE(a.allocate(1, from_a));
  CHECK(a.contains(3));
  CHECK_FALSE(a.contains(4));
  CHECK_FALSE(b.contains(3));
  CHECK(b.contains(6));
  CHECK_FALSE(b.contains(7));
  CHECK_THROWS_WITH_AS(b.release(PageId{3}), doctest::Contains("not in this pool (pages [4, 7))"),
                       std::logic_error);
  CHECK_THROWS_WITH_AS(a.refcount(5), doctest::Contains("page 5 is not in this pool"),
                       std::logic_error);

  // One storage: a partition's page is the parent's page of the same id.
  for (PageId p : from_a) std::memset(a.host_bytes(p).data(), static_cast<int>(p + 1), 128);
  for (PageId p : from_b) std::memset(b.host_bytes(p).data(), static_cast<int>(p + 1), 128);
  for (PageId p : {0u, 3u, 4u, 5u}) {
    CHECK(pool.host_bytes(p).data() == (p < 4 ? a : b).host_bytes(p).data());
    for (std::byte byte : pool.host_bytes(p)) REQUIRE(std::to_integer<uint32_t>(byte) == p + 1);
  }
  a.release(from_a);
  b.release(from_b);
  CHECK(a.free_pages() == 4);
  CHECK(b.free_pages() == 3);
  CHECK(pool.free_pages() == 3);  // still lent
}

TEST_CASE("a partition gives its pages back when destroyed, and bad partitions are refused") {
  PagePool pool(KvLayout{1, 1, 8, 2, 4}, 6);
  {
    PagePool a(pool, 2);
    PagePool b(pool, 4);
    CHECK(pool.free_pages() == 0);
    CHECK_THROWS_WITH_AS(PagePool(pool, 1), doctest::Contains("the 0 pages not yet lent"),
                         std::invalid_argument);
  }
  CHECK(pool.free_pages() == 6);
  for (PageId p = 0; p < 6; ++p) CHECK(pool.refcount(p) == 0);
  // All back: the pool splits afresh from its first id.
  CHECK(PagePool(pool, 6).first_page() == 0);

  CHECK_THROWS_WITH_AS(PagePool(pool, 0), doctest::Contains("between 1 and the 6 pages"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PagePool(pool, 7), doctest::Contains("got 7"), std::invalid_argument);
  std::vector<PageId> held;
  REQUIRE(pool.allocate(1, held));  // in use by someone
  const std::string in_use = fmt::format("page {} is in use", held[0]);
  CHECK_THROWS_WITH_AS(PagePool(pool, 6), doctest::Contains(in_use.c_str()), std::logic_error);
  CHECK(pool.free_pages() == 5);  // the refused partition took nothing
  pool.release(held);

  const PagePool::Claim claim(pool, "a runtime");
  CHECK_THROWS_WITH_AS(PagePool(pool, 2), doctest::Contains("a runtime uses"), std::logic_error);
}

TEST_CASE("a pool is claimed by one owner at a time, and only while all its pages are free") {
  PagePool pool(KvLayout{1, 1, 8, 2, 4}, 4);
  {
    const PagePool::Claim first(pool, "first");
    CHECK_THROWS_WITH_AS(PagePool::Claim(pool, "second"),
                         doctest::Contains("second: its PagePool already serves another runtime"),
                         std::logic_error);
  }
  { const PagePool::Claim again(pool, "again"); }  // released with the first claim

  std::vector<PageId> held;
  REQUIRE(pool.allocate(1, held));
  CHECK_THROWS_WITH_AS(PagePool::Claim(pool, "busy"),
                       doctest::Contains("busy: 1 of its PagePool's 4 pages are in use"),
                       std::logic_error);
  pool.release(held);
  {
    PagePool part(pool, 2);
    CHECK_THROWS_WITH_AS(PagePool::Claim(pool, "lent"), doctest::Contains("(lent to partitions)"),
                         std::logic_error);
    const PagePool::Claim on_part(part, "on a partition");
  }
  const PagePool::Claim last(pool, "last");
}

namespace {

// The reference free list: every free id listed up front, lowest on top, a stack (what a pool was
// before it stopped listing the ids it never handed out).
struct ModelPool {
  std::vector<PageId> free;
  std::vector<uint32_t> count;
  ModelPool(PageId first, uint32_t pages) : count(pages, 0) {
    for (uint32_t i = 0; i < pages; ++i) free.push_back(first + pages - 1 - i);
  }
};

}  // namespace

TEST_CASE("pages are handed out released-last first, then in id order, as a full free list would") {
  for (const uint32_t capacity : {1u, 7u, 64u}) {
    CAPTURE(capacity);
    PagePool pool(KvLayout{1, 1, 8, 2, 4}, capacity);
    ModelPool model(0, capacity);
    std::vector<PageId> held;  // one entry per reference
    uint64_t seed = capacity;
    const auto next = [&](uint64_t n) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      return (seed >> 33) % n;
    };
    for (int step = 0; step < 2000; ++step) {
      const uint64_t what = next(4);
      if (what <= 1) {  // allocate a few
        const auto n = static_cast<uint32_t>(next(4));
        std::vector<PageId> got;
        const bool fits = n <= model.free.size();
        REQUIRE(pool.allocate(n, got) == fits);
        if (!fits) continue;
        for (uint32_t i = 0; i < n; ++i) {
          REQUIRE(got[i] == model.free.back());
          model.count[got[i]] = 1;
          model.free.pop_back();
          held.push_back(got[i]);
        }
      } else if (!held.empty()) {  // retain or release a held page
        const std::size_t k = next(held.size());
        const PageId page = held[k];
        if (what == 2) {
          pool.retain(page);
          ++model.count[page];
          held.push_back(page);
        } else {
          pool.release(page);
          if (--model.count[page] == 0) model.free.push_back(page);
          held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
        }
      }
      REQUIRE(pool.free_pages() == model.free.size());
      for (PageId p = 0; p < capacity; ++p) REQUIRE(pool.refcount(p) == model.count[p]);
    }
  }
}

TEST_CASE("a pool that has handed out some pages splits off a partition of ids it never used") {
  PagePool pool(KvLayout{1, 1, 8, 2, 4}, 8);
  std::vector<PageId> got;
  REQUIRE(pool.allocate(3, got));  // 0, 1, 2
  pool.release(PageId{1});
  CHECK_THROWS_AS(PagePool(pool, 3), std::logic_error);  // page 2 is in use
  pool.release(std::vector<PageId>{0, 2});
  {
    PagePool part(pool, 5);  // ids 0..4: two released, three never handed out
    CHECK(pool.free_pages() == 3);
    std::vector<PageId> rest;
    REQUIRE(pool.allocate(3, rest));
    CHECK(rest == std::vector<PageId>{5, 6, 7});
    std::vector<PageId> from_part;
    REQUIRE(part.allocate(5, from_part));
    CHECK(from_part == std::vector<PageId>{0, 1, 2, 3, 4});
    part.release(from_part);
    pool.release(rest);
  }
  // Back whole: the partition's ids came back last (0 to 4), on top of the parent's 5, 6, 7.
  CHECK(pool.free_pages() == 8);
  std::vector<PageId> all;
  REQUIRE(pool.allocate(8, all));
  CHECK(all == std::vector<PageId>{4, 3, 2, 1, 0, 7, 6, 5});
}
