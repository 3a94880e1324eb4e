#include "eviction/cache_budget.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace radixkv {

CacheBudget::CacheBudget(const BudgetConfig& config, uint64_t bytes_per_page) {
  if (bytes_per_page == 0)
    throw std::invalid_argument("CacheBudget: bytes_per_page must be at least 1");
  if (config.cache_bytes < bytes_per_page) {
    throw std::invalid_argument(fmt::format("cache budget of {} bytes is below one page ({} bytes)",
                                            config.cache_bytes, bytes_per_page));
  }
  // Written as negations so that NaN fails too.
  if (!(config.high_watermark > 0.0 && config.high_watermark <= 1.0)) {
    throw std::invalid_argument(
        fmt::format("high watermark {} is outside (0, 1]", config.high_watermark));
  }
  if (!(config.low_watermark > 0.0 && config.low_watermark <= config.high_watermark)) {
    throw std::invalid_argument(fmt::format("low watermark {} is outside (0, high watermark {}]",
                                            config.low_watermark, config.high_watermark));
  }
  limit_pages_ = config.cache_bytes / bytes_per_page;
  const auto scaled = [&](double fraction) {
    return static_cast<uint64_t>(std::floor(static_cast<double>(limit_pages_) * fraction));
  };
  high_pages_ = std::max<uint64_t>(1, scaled(config.high_watermark));
  low_pages_ = std::min(high_pages_, scaled(config.low_watermark));
}

std::string CacheBudget::to_string() const {
  return fmt::format("{} pages (high {}, low {})", limit_pages_, high_pages_, low_pages_);
}

AllocResult BudgetedAllocator::allocate(uint32_t n, std::vector<PageId>& out) {
  AllocResult result;
  while (pool_.free_pages() < n) {
    const uint64_t released = evictor_.evict_pages(n - pool_.free_pages());
    result.evicted_pages += released;
    // Released pages still held by a sequence do not reach the free list; stop once the cache has
    // nothing more to give.
    if (released == 0) break;
  }
  evicted_total_ += result.evicted_pages;
  if (!pool_.allocate(n, out)) {
    result.status = AllocStatus::kNoSpace;
    result.short_pages = n - pool_.free_pages();
  }
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
