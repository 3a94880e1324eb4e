// Retention: what a caller asks of the cache about how long to keep what it cached, as
// TensorRT-LLM defines it, and the one request the runtime makes of a policy for it.
//
// TensorRT-LLM's KvCacheRetentionConfig (cpp/include/tensorrt_llm/executor/executor.h; the
// user's guide docs/source/features/kvcache.md, "How to Change Block Priorities") lets a request
// give a list of TokenRangeRetentionConfig{tokenStart, tokenEnd, priority, durationMs}: the blocks
// of tokens [tokenStart, tokenEnd) (tokenEnd absent: to the end of the sequence) are kept at
// `priority` (0..100, 35 by default: kDefaultPriority) for `durationMs` after they are stored
// (absent: never lapses); then they fall back to the default. Lower priorities leave first.
// TokenRangeRetention is that range, in seconds on the caller's clock (PrefixCacheRuntime::
// set_now), checked by check_retention_ranges().
//
// The runtime turns a request's ranges into one Retention per cached node the ranges touch, when
// the request commits its pages (eviction/retention_layer.h says how a policy honours them): a
// node spanning pages under several ranges gets every one of them, merged (the strongest priority
// for the longest of their deadlines). Sessions: a Retention may name the session whose latest
// path ends at the entry (PrefixCacheRuntime::hold/release keep that path).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "eviction/eviction_entry.h"

namespace radixkv {

inline constexpr double kRetainForever = std::numeric_limits<double>::infinity();

// One of TensorRT-LLM's TokenRangeRetentionConfig, in seconds.
struct TokenRangeRetention {
  static constexpr uint32_t kToEnd = UINT32_MAX;  // tokenEnd absent: through the last token
  uint32_t token_start = 0;
  uint32_t token_end = kToEnd;  // exclusive
  int32_t priority = kDefaultPriority;
  double duration_s = kRetainForever;  // from the commit; kRetainForever: never lapses
};

// Throws std::invalid_argument naming `what` (e.g. "request 7"), the range's index and the fault:
// a start at or past its end, an end past `prompt_tokens` (other than kToEnd), a priority outside
// [kMinPriority, kMaxPriority], a duration that is not > 0 (NaN included).
void check_retention_ranges(std::span<const TokenRangeRetention> ranges, uint32_t prompt_tokens,
                            std::string_view what);

// What the runtime asks a policy to keep about one entry (EvictionPolicy::retain).
struct Retention {
  int32_t priority = kDefaultPriority;  // [kMinPriority, kMaxPriority]
  double until = 0.0;                   // deadline on the caller's clock (kRetainForever: none)
  // Nonzero: the entry ends `session`'s latest committed path, the one hold(session) keeps.
  uint64_t session = 0;
  double now = 0.0;  // the caller's clock at this call
};

}  // namespace radixkv
