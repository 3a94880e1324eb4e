#include "eviction/retention.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace radixkv {

void check_retention_ranges(std::span<const TokenRangeRetention> ranges, uint32_t prompt_tokens,
                            std::string_view what) {
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const TokenRangeRetention& r = ranges[i];
    std::string problem;
    if (r.token_end != TokenRangeRetention::kToEnd && r.token_end > prompt_tokens) {
      problem =
          fmt::format("ends at token {}, past the prompt's {} tokens", r.token_end, prompt_tokens);
    } else if (r.token_start >= r.token_end ||
               (r.token_end == TokenRangeRetention::kToEnd && r.token_start >= prompt_tokens)) {
      problem = fmt::format("starts at token {}, not before its end", r.token_start);
    } else if (r.priority < kMinPriority || r.priority > kMaxPriority) {
      problem =
          fmt::format("has priority {}, outside [{}, {}]", r.priority, kMinPriority, kMaxPriority);
    } else if (!(r.duration_s > 0.0)) {
      problem = fmt::format("has a duration of {} seconds; it must be positive (or forever)",
                            r.duration_s);
    }
    if (!problem.empty()) {
      throw std::invalid_argument(
          fmt::format("{}: retention range {} [{}, {}) {}", what, i, r.token_start,
                      r.token_end == TokenRangeRetention::kToEnd ? std::string("end")
                                                                 : std::to_string(r.token_end),
                      problem));
    }
  }
}

}  // namespace radixkv
