#include "tools/cli/budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
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

// One watermark flag as given; nullopt when not given.
std::optional<Watermark> watermark(const std::string& text, std::string_view flag) {
  if (text.empty()) return std::nullopt;
  try {
    const Threshold threshold = parse_threshold(text);
    return threshold.is_size ? Watermark::of_bytes(threshold.bytes) : threshold.fraction;
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", flag, e.what()));
  }
}

// A quota's share: 0, a fraction in (0, 1] or a size.
Watermark quota_share(std::string_view text) {
  if (text == "0") return Watermark(0.0);
  const Threshold threshold = parse_threshold(text);
  return threshold.is_size ? Watermark::of_bytes(threshold.bytes) : threshold.fraction;
}

NamespaceQuota parse_quota(std::string_view entry) {
  const std::size_t eq = entry.find('=');
  if (eq == std::string_view::npos) {
    throw UsageError(fmt::format("'{}' is not NS=MIN:MAX (no '=')", entry));
  }
  const std::string_view ns_text = entry.substr(0, eq);
  NamespaceQuota quota;
  const auto [end, error] =
      std::from_chars(ns_text.data(), ns_text.data() + ns_text.size(), quota.name_space);
  if (ns_text.empty() || error != std::errc() || end != ns_text.data() + ns_text.size()) {
    throw UsageError(fmt::format("'{}': the namespace '{}' is not a decimal integer (a trace's ns)",
                                 entry, ns_text));
  }
  const std::string_view shares = entry.substr(eq + 1);
  const std::size_t colon = shares.find(':');
  const std::string_view min = shares.substr(0, colon);
  const std::string_view max = colon == std::string_view::npos ? "" : shares.substr(colon + 1);
  if (min.empty()) throw UsageError(fmt::format("'{}': no MIN after '='", entry));
  try {
    quota.min = quota_share(min);
    if (!max.empty()) quota.max = quota_share(max);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("'{}': {}", entry, e.what()));
  }
  return quota;
}

}  // namespace

std::vector<NamespaceQuota> parse_quotas(const std::vector<std::string>& texts,
                                         std::string_view flag) {
  std::vector<NamespaceQuota> quotas;
  for (const std::string& text : texts) {
    std::string_view rest = text;
    while (true) {
      const std::size_t comma = rest.find(',');
      try {
        quotas.push_back(parse_quota(rest.substr(0, comma)));
      } catch (const UsageError& e) {
        if (flag.empty()) throw;
        throw UsageError(fmt::format("{}: {}", flag, e.what()));
      }
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  return quotas;
}

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

Watermarks resolve_watermarks(const std::string& high_text, const std::string& low_text,
                              Watermarks defaults, uint64_t budget_pages, uint64_t bytes_per_page,
                              std::string_view high_flag, std::string_view low_flag) {
  const std::optional<Watermark> high = watermark(high_text, high_flag);
  const std::optional<Watermark> low = watermark(low_text, low_flag);
  Watermarks out{high.value_or(defaults.high), low.value_or(defaults.low)};
  try {
    // A high watermark given alone takes the default low one down with it where that would be
    // above it.
    if (!low && CacheBudget::watermark_pages(out.low, budget_pages, bytes_per_page) >
                    CacheBudget::watermark_pages(out.high, budget_pages, bytes_per_page)) {
      out.low = out.high;
    }
    CacheBudget({budget_pages * bytes_per_page, out.high, out.low}, bytes_per_page);
  } catch (const std::invalid_argument& e) {
    // Named after the watermark CacheBudget found wrong, with the text as given.
    const bool low_wrong = std::string_view(e.what()).starts_with("low");
    const std::string& text = low_wrong ? low_text : high_text;
    throw UsageError(fmt::format("{}: {}{}", low_wrong ? low_flag : high_flag,
                                 text.empty() ? "" : text + ": ", e.what()));
  }
  return out;
}

}  // namespace radixkv::tools
