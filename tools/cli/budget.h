// The budget flags of `radixkv replay`, turned into pages: --capacity-tokens, --cache-bytes,
// --pool-bytes, --sweep, and the watermarks --high-watermark / --low-watermark.
//
// Every size is checked: a budget must hold at least one page, name fewer pages than 32-bit page
// ids can, and be at most 2^64 - 1 bytes (pages x bytes per page is computed with checked_mul, so
// `--page-tokens 65536 --capacity-tokens 2e14` is refused instead of wrapping to 7.77e18 bytes).
//
// Watermarks are fractions of the budget in (0, 1] or sizes ("38GiB"), parsed once into a
// Watermark and checked low <= high <= budget by CacheBudget itself, whose rule turns either into
// pages (eviction/cache_budget.h is the one definition).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "eviction/cache_budget.h"
#include "eviction/quota_policy.h"
#include "kv_store/kv_layout.h"

namespace radixkv::tools {

// Pages of a budget given in tokens or bytes; UsageError naming `flag`.
uint64_t pages_for_tokens(uint64_t tokens, const KvLayout& layout, std::string_view flag);
uint64_t pages_for_bytes(uint64_t bytes, const KvLayout& layout, std::string_view flag);
// A --sweep entry: tokens ("1e6") or bytes ("8GiB").
uint64_t pages_for_capacity(std::string_view text, const KvLayout& layout, std::string_view flag);
// Checks every entry of a capacity list ("1e6,8GiB": --sweep, --sweep-host); UsageError with the
// reason for the first bad one.
void parse_capacity_list(const std::string& text);

struct Watermarks {
  Watermark high = 1.0;
  Watermark low = 1.0;
};

// The watermark flags' text ("" when not given; `high_flag`/`low_flag` name them in errors) over a
// budget of `budget_pages`. A watermark not given takes its default, the low one lowered to the
// high one when needed. Throws UsageError.
Watermarks resolve_watermarks(const std::string& high, const std::string& low, Watermarks defaults,
                              uint64_t budget_pages, uint64_t bytes_per_page,
                              std::string_view high_flag, std::string_view low_flag);

// --quota NS=MIN:MAX (repeatable, or a comma list, as a config file's array gives it): namespace
// NS (a trace's `ns`, a decimal integer) keeps at least MIN and gives its own pages first at MAX,
// each a fraction of the budget in [0, 1] or a size ("2GiB"), as the watermarks are given; MAX may
// be left out ("NS=MIN:" or "NS=MIN": the whole budget). UsageError naming `flag` (when not
// empty) and the entry.
// Checks of the quotas against the budget (min above max, mins over the budget) are the
// runtime's (eviction/quota_policy.h, quota_pages).
std::vector<NamespaceQuota> parse_quotas(const std::vector<std::string>& texts,
                                         std::string_view flag);

}  // namespace radixkv::tools
