#include "router/overlap_gap.h"

#include <algorithm>

namespace radixkv::router {

uint64_t predicted_hit_tokens(uint64_t overlap_tokens, uint64_t prompt_tokens,
                              uint64_t page_tokens) {
  if (prompt_tokens == 0) return overlap_tokens;
  const uint64_t cut = (prompt_tokens - 1) / page_tokens * page_tokens;
  return std::min(overlap_tokens, cut);
}

void OverlapGap::add(uint64_t predicted, uint64_t delivered) {
  ++observations;
  predicted_tokens += predicted;
  delivered_tokens += delivered;
  const uint64_t gap = predicted > delivered ? predicted - delivered : delivered - predicted;
  if (predicted > delivered) overpredicted_tokens += gap;
  if (delivered > predicted) underpredicted_tokens += gap;
  mismatched += gap != 0;
  for (size_t i = 0; i < kGapBuckets.size(); ++i) gap_at_most[i] += gap <= kGapBuckets[i];
}

OverlapGap& OverlapGap::operator+=(const OverlapGap& o) {
  observations += o.observations;
  predicted_tokens += o.predicted_tokens;
  delivered_tokens += o.delivered_tokens;
  overpredicted_tokens += o.overpredicted_tokens;
  underpredicted_tokens += o.underpredicted_tokens;
  mismatched += o.mismatched;
  for (size_t i = 0; i < kGapBuckets.size(); ++i) gap_at_most[i] += o.gap_at_most[i];
  return *this;
}

}  // namespace radixkv::router
