// The byte budget of the cache, and allocation that evicts to make room.
//
// CacheBudget turns `cache_bytes` and two watermarks into page counts:
//   high_pages = floor(cache_bytes * high_watermark / bytes_per_page)
//   low_pages  = floor(cache_bytes * low_watermark  / bytes_per_page)
// When cached pages exceed high, the cache is evicted down to low (a batch, so that eviction does
// not run on every insert). Requirements, each checked with an error that names the input:
// cache_bytes holds at least one page, 0 < low_watermark <= high_watermark <= 1.
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

struct BudgetConfig {
  uint64_t cache_bytes = 0;
  double high_watermark = 0.95;
  double low_watermark = 0.85;
};

class CacheBudget {
 public:
  CacheBudget(const BudgetConfig& config, uint64_t bytes_per_page);
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
  bool ok() const { return status == AllocStatus::kOk; }
};

class BudgetedAllocator {
 public:
  BudgetedAllocator(PagePool& pool, Evictor& evictor, CacheBudget budget)
      : pool_(pool), evictor_(evictor), budget_(budget) {}

  // All or nothing, like PagePool::allocate, evicting cache pages when the pool is short.
  AllocResult allocate(uint32_t n, std::vector<PageId>& out);
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
