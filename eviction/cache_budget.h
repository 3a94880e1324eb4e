// The byte budget of the cache, and allocation that evicts to make room.
//
// CacheBudget turns `cache_bytes` and two watermarks into page counts, by one rule: a size becomes
// the whole pages it holds (a partial page holds no KV), a fraction the whole pages of that share
// of the budget:
//   limit_pages = floor(cache_bytes / bytes_per_page)
//   a watermark given as a fraction f: floor(limit_pages * f) pages
//   a watermark given as a size of S bytes: floor(S / bytes_per_page) pages
// with the high watermark at least one page, and the low one at most the high one. When cached
// pages exceed high, the cache is evicted down to low (a batch, so that eviction does not run on
// every insert). Requirements, each checked with an error that names the input: cache_bytes holds
// at least one page; a fraction is in (0, 1], low <= high; a size holds at least one page and at
// most the budget, low <= high. Every caller (the runtime, each replay mode, the command line's
// checks) goes through this one definition; nobody converts a size to a fraction or back.
//
// BudgetedAllocator allocates pool pages for sequences. When the pool is short it evicts exactly
// the shortfall from the cache; when nothing more is evictable it returns kNoSpace with nothing
// allocated and nothing leaked, so a scheduler can wait or preempt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv_store/page_pool.h"

namespace radixkv {

// What the budget needs from the owner of the cached pages (the radix tree).
class Evictor {
 public:
  virtual ~Evictor() = default;
  virtual uint64_t cached_pages() const = 0;
  // Cached pages that no live sequence pins: the most that evict_pages() can ever release.
  virtual uint64_t evictable_pages() const = 0;
  // Releases up to n cached pages in policy order; returns how many it released.
  virtual uint64_t evict_pages(uint64_t n) = 0;
};

// A watermark as given: a fraction of the budget, or a size of its own (`--high-watermark 38GiB`).
class Watermark {
 public:
  // Implicit, so that `.high_watermark = 0.95` reads as it always did.
  constexpr Watermark(double fraction) : fraction_(fraction) {}
  static constexpr Watermark of_bytes(uint64_t bytes) {
    Watermark w(0.0);
    w.bytes_ = bytes;
    w.is_size_ = true;
    return w;
  }
  bool is_size() const { return is_size_; }
  double fraction() const { return fraction_; }  // when !is_size()
  uint64_t bytes() const { return bytes_; }      // when is_size()
  // "0.95" or "38 GiB".
  std::string to_string() const;

 private:
  double fraction_;
  uint64_t bytes_ = 0;
  bool is_size_ = false;
};

struct BudgetConfig {
  uint64_t cache_bytes = 0;
  Watermark high_watermark = 0.95;
  Watermark low_watermark = 0.85;
};

class CacheBudget {
 public:
  CacheBudget(const BudgetConfig& config, uint64_t bytes_per_page);
  // The pages `watermark` stands for in a budget of `limit_pages` (the rule above, before the
  // high one is raised to one page). Throws std::invalid_argument for a fraction outside (0, 1] or
  // a size below one page or above the budget.
  static uint64_t watermark_pages(const Watermark& watermark, uint64_t limit_pages,
                                  uint64_t bytes_per_page);
  uint64_t limit_pages() const { return limit_pages_; }
  uint64_t high_pages() const { return high_pages_; }
  uint64_t low_pages() const { return low_pages_; }
  // Pages to evict now so that `cached_pages` drops to low; 0 while it is at or under high.
  uint64_t excess_pages(uint64_t cached_pages) const {
    return cached_pages > high_pages_ ? cached_pages - low_pages_ : 0;
  }
  std::string to_string() const;

 private:
  uint64_t limit_pages_, high_pages_, low_pages_;
};

enum class AllocStatus { kOk, kNoSpace };

struct AllocResult {
  AllocStatus status = AllocStatus::kOk;
  uint64_t evicted_pages = 0;  // cache pages evicted to make room (also on kNoSpace)
  uint64_t short_pages = 0;    // on kNoSpace: pages still missing after evicting all it could
  uint32_t pages = 0;          // pages allocated (appended to the caller's vector)
  bool ok() const { return status == AllocStatus::kOk; }
};

class BudgetedAllocator {
 public:
  BudgetedAllocator(PagePool& pool, Evictor& evictor, CacheBudget budget)
      : pool_(pool), evictor_(evictor), budget_(budget) {}

  // All or nothing, like PagePool::allocate, evicting cache pages when the pool is short.
  AllocResult allocate(uint32_t n, std::vector<PageId>& out) { return allocate_up_to(n, n, out); }
  // As many pages as the pool can give, up to `most`, evicting what it can to have them; kNoSpace,
  // with nothing allocated, when that is fewer than `least`.
  AllocResult allocate_up_to(uint32_t least, uint32_t most, std::vector<PageId>& out);
  // Call after inserting into the cache: evicts down to the low watermark once above high.
  uint64_t enforce_watermarks();

  const CacheBudget& budget() const { return budget_; }
  uint64_t evicted_pages_total() const { return evicted_total_; }

 private:
  PagePool& pool_;
  Evictor& evictor_;
  CacheBudget budget_;
  uint64_t evicted_total_ = 0;
};

}  // namespace radixkv
