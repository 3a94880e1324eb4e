#include "tools/cli/budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "eviction/cache_budget.h"
#include "kv_store/page_backend.h"
#include "tools/cli/flags.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

uint64_t checked_pages(uint64_t pages, const KvLayout& layout, std::string_view flag,
                       std::string_view asked) {
  if (pages == 0) {
    throw UsageError(fmt::format("{}: {} hold no page of {} tokens ({})", flag, asked,
                                 layout.page_tokens, format_bytes(layout.bytes_per_page())));
  }
  if (pages >= kInvalidPage) {
    throw UsageError(
        fmt::format("{}: {} are {} pages, more than 32-bit page ids can name", flag, asked, pages));
  }
  try {
    checked_mul(pages, layout.bytes_per_page(), "bytes of the budget");
  } catch (const std::overflow_error&) {
    throw UsageError(fmt::format("{}: {} are {} pages of {}, more than 2^64 bytes in all", flag,
                                 asked, pages, format_bytes(layout.bytes_per_page())));
  }
  return pages;
}

// The fraction of `budget_pages` for which CacheBudget computes exactly `pages` pages.
double fraction_for_pages(uint64_t pages, uint64_t budget_pages) {
  double fraction = static_cast<double>(pages) / static_cast<double>(budget_pages);
  while (std::floor(static_cast<double>(budget_pages) * fraction) < static_cast<double>(pages)) {
    fraction = std::nextafter(fraction, 2.0);
  }
  return fraction;
}

// One watermark as a fraction of the budget; nullopt when not given.
std::optional<double> watermark(const std::string& text, uint64_t budget_pages,
                                uint64_t bytes_per_page, std::string_view flag) {
  if (text.empty()) return std::nullopt;
  Threshold threshold;
  try {
    threshold = parse_threshold(text);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", flag, e.what()));
  }
  if (!threshold.is_size) return threshold.fraction;
  const uint64_t pages = threshold.bytes / bytes_per_page;
  if (pages == 0) {
    throw UsageError(
        fmt::format("{}: {} is less than one page ({})", flag, text, format_bytes(bytes_per_page)));
  }
  if (pages > budget_pages) {
    throw UsageError(fmt::format("{}: {} is {} pages, more than the budget of {} pages ({})", flag,
                                 text, pages, budget_pages,
                                 format_bytes(budget_pages * bytes_per_page)));
  }
  return fraction_for_pages(pages, budget_pages);
}

}  // namespace

uint64_t pages_for_tokens(uint64_t tokens, const KvLayout& layout, std::string_view flag) {
  return checked_pages(tokens / layout.page_tokens, layout, flag, fmt::format("{} tokens", tokens));
}

uint64_t pages_for_bytes(uint64_t bytes, const KvLayout& layout, std::string_view flag) {
  return checked_pages(bytes / layout.bytes_per_page(), layout, flag,
                       fmt::format("{} bytes", bytes));
}

uint64_t pages_for_capacity(std::string_view text, const KvLayout& layout, std::string_view flag) {
  try {
    return has_byte_unit(text) ? pages_for_bytes(parse_size(text), layout, flag)
                               : pages_for_tokens(parse_count(text), layout, flag);
  } catch (const UsageError& e) {
    const std::string reason = e.what();
    throw UsageError(reason.starts_with(flag) ? reason : fmt::format("{}: {}", flag, reason));
  }
}

void parse_capacity_list(const std::string& text) {
  for (const std::string& item : split_list(text)) {
    has_byte_unit(item) ? parse_size(item) : parse_count(item);
  }
}

WatermarkFractions resolve_watermarks(const std::string& high_text, const std::string& low_text,
                                      WatermarkFractions defaults, uint64_t budget_pages,
                                      uint64_t bytes_per_page, std::string_view high_flag,
                                      std::string_view low_flag) {
  const std::optional<double> high = watermark(high_text, budget_pages, bytes_per_page, high_flag);
  const std::optional<double> low = watermark(low_text, budget_pages, bytes_per_page, low_flag);
  WatermarkFractions out;
  out.high = high.value_or(defaults.high);
  out.low = low.value_or(std::min(defaults.low, out.high));
  if (out.low > out.high) {
    throw UsageError(fmt::format("{}: {} is above the high watermark {} (low <= high)", low_flag,
                                 low_text, high ? high_text : fmt::format("{}", out.high)));
  }
  try {
    CacheBudget({budget_pages * bytes_per_page, out.high, out.low}, bytes_per_page);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{} / {}: {}", high_flag, low_flag, e.what()));
  }
  return out;
}

}  // namespace radixkv::tools
