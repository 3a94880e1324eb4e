// Predicted against delivered: what the router's index said a worker held of a request (the
// predicted overlap) next to what the worker reused when it admitted it (the delivered hit), both
// in tokens. The two differ when the index is stale: events not yet applied (the worker holds more
// than the index says: under-predicted) or blocks evicted since (it holds less: over-predicted). A
// router (router/route_ledger.h, POST /observe) and the cluster replay (tools/replay/
// cluster_replay.h) keep the same sums, so an operator reads one gap in both.
//
// The predicted hit is the overlap cut as an engine cuts its match: a prompt's last token is
// always computed, so at most floor((prompt - 1) / page) * page tokens are reused (vLLM's
// max_cache_hit_length, radixkv's reuse_cut). Without a prompt length (a route by block hashes)
// the overlap is the prediction.
#pragma once

#include <array>
#include <cstdint>

namespace radixkv::router {

// The hit an engine with pages of `page_tokens` would reuse when it holds `overlap_tokens` of a
// prompt of `prompt_tokens` tokens (0: unknown, no cut). page_tokens >= 1.
uint64_t predicted_hit_tokens(uint64_t overlap_tokens, uint64_t prompt_tokens,
                              uint64_t page_tokens);

// Sums over observed requests. The histogram counts |predicted - delivered| per request, with
// Prometheus's cumulative buckets (le = kGapBuckets[i]; the last, +Inf, is `observations`).
struct OverlapGap {
  static constexpr std::array<uint64_t, 8> kGapBuckets = {0, 16, 64, 256, 1024, 4096, 16384, 65536};

  uint64_t observations = 0;
  uint64_t predicted_tokens = 0;
  uint64_t delivered_tokens = 0;
  uint64_t overpredicted_tokens = 0;   // sum of max(0, predicted - delivered)
  uint64_t underpredicted_tokens = 0;  // sum of max(0, delivered - predicted)
  uint64_t mismatched = 0;             // observations with predicted != delivered
  std::array<uint64_t, kGapBuckets.size()> gap_at_most{};  // observations with gap <= bucket

  void add(uint64_t predicted, uint64_t delivered);
  // over + under: 0 exactly when every observation was predicted right.
  uint64_t gap_tokens() const { return overpredicted_tokens + underpredicted_tokens; }
  OverlapGap& operator+=(const OverlapGap& other);
  friend bool operator==(const OverlapGap&, const OverlapGap&) = default;
};

}  // namespace radixkv::router
