#include "eviction/cache_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace radixkv {

namespace {

uint64_t pages_of(const Watermark& w, uint64_t limit, uint64_t bytes_per_page, const char* which) {
  if (w.is_size()) {
    const uint64_t pages = w.bytes() / bytes_per_page;
    if (pages == 0) {
      throw std::invalid_argument(
          fmt::format("{} watermark of {} bytes is below one page ({} bytes)", which, w.bytes(),
                      bytes_per_page));
    }
    if (pages > limit) {
      throw std::invalid_argument(
          fmt::format("{} watermark of {} bytes is {} pages, more than the budget of {} pages",
                      which, w.bytes(), pages, limit));
    }
    return pages;
  }
  // Written as a negation so that NaN fails too.
  if (!(w.fraction() > 0.0 && w.fraction() <= 1.0)) {
    throw std::invalid_argument(
        fmt::format("{} watermark {} is outside (0, 1]", which, w.fraction()));
  }
  return static_cast<uint64_t>(std::floor(static_cast<double>(limit) * w.fraction()));
}

}  // namespace

uint64_t CacheBudget::watermark_pages(const Watermark& watermark, uint64_t limit_pages,
                                      uint64_t bytes_per_page) {
  return pages_of(watermark, limit_pages, bytes_per_page, "a");
}

std::string Watermark::to_string() const {
  return is_size_ ? fmt::format("{} bytes", bytes_) : fmt::format("{}", fraction_);
}

CacheBudget::CacheBudget(const BudgetConfig& config, uint64_t bytes_per_page) {
  if (bytes_per_page == 0)
    throw std::invalid_argument("CacheBudget: bytes_per_page must be at least 1");
  if (config.cache_bytes < bytes_per_page) {
    throw std::invalid_argument(fmt::format("cache budget of {} bytes is below one page ({} bytes)",
                                            config.cache_bytes, bytes_per_page));
  }
  limit_pages_ = config.cache_bytes / bytes_per_page;
  const Watermark& high = config.high_watermark;
  const Watermark& low = config.low_watermark;
  high_pages_ = std::max<uint64_t>(1, pages_of(high, limit_pages_, bytes_per_page, "high"));
  const uint64_t low_pages = pages_of(low, limit_pages_, bytes_per_page, "low");
  // Fractions compare as given (a tiny budget may floor both to the same page count); a size
  // compares in pages.
  const bool above = !high.is_size() && !low.is_size() ? low.fraction() > high.fraction()
                                                       : low_pages > high_pages_;
  if (above) {
    throw std::invalid_argument(fmt::format("low watermark {} is above the high watermark {}",
                                            low.to_string(), high.to_string()));
  }
  low_pages_ = std::min(high_pages_, low_pages);
}

std::string CacheBudget::to_string() const {
  return fmt::format("{} pages (high {}, low {})", limit_pages_, high_pages_, low_pages_);
}

AllocResult BudgetedAllocator::allocate_up_to(uint32_t least, uint32_t most,
                                              std::vector<PageId>& out) {
  AllocResult result;
  while (pool_.free_pages() < most) {
    const uint64_t released = evictor_.evict_pages(most - pool_.free_pages());
    result.evicted_pages += released;
    // Released pages still held by a sequence do not reach the free list; stop once the cache has
    // nothing more to give.
    if (released == 0) break;
  }
  evicted_total_ += result.evicted_pages;
  const uint32_t n = std::min(most, pool_.free_pages());
  if (n < least || !pool_.allocate(n, out)) {
    result.status = AllocStatus::kNoSpace;
    result.short_pages = least - n;
    return result;
  }
  result.pages = n;
  return result;
}

uint64_t BudgetedAllocator::enforce_watermarks() {
  const uint64_t excess = budget_.excess_pages(evictor_.cached_pages());
  if (excess == 0) return 0;
  const uint64_t released = evictor_.evict_pages(excess);
  evicted_total_ += released;
  return released;
}

}  // namespace radixkv
