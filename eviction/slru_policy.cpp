#include "eviction/slru_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace radixkv {

SlruPolicy::SlruPolicy(double protected_fraction) : protected_fraction_(protected_fraction) {
  if (!(protected_fraction >= 0.0 && protected_fraction <= 1.0)) {
    throw std::invalid_argument(
        fmt::format("slru policy: protected fraction {} is outside [0, 1]", protected_fraction));
  }
}

void SlruPolicy::adopt(EvictionEntry& entry, const AccessHistory& past) {
  SlruState& s = make_state<SlruState>(entry);
  s.hits = saturated_hits(past.hits);
  s.last = past.last.tick;
}

AccessHistory SlruPolicy::history(const EvictionEntry& entry) const {
  AccessHistory past;
  past.hits = state(entry).hits;
  past.last.tick = state(entry).last;
  return past;
}

void SlruPolicy::add(EvictionEntry& entry) {
  SlruState& s = state(entry);
  newest_tick_ = std::max(newest_tick_, s.last);
  s.rank = s.last;
  if (s.segment == kProtected) ++protected_linked_;
  link(s);
}

void SlruPolicy::on_access(EvictionEntry& entry, const AccessHint& hint) {
  SlruState& s = state(entry);
  newest_tick_ = std::max(newest_tick_, hint.tick);
  s.last = hint.tick;
  if (hint.counts_as_hit && s.hits < UINT32_MAX) ++s.hits;
  const uint8_t segment = s.hits >= 2 ? kProtected : s.segment;
  if (!s.hook.is_linked()) {
    s.segment = segment;
    return;
  }
  relink(
      s,
      [&](SlruState& x) {
        if (x.segment != segment) ++protected_linked_;  // only probation -> protected happens here
        x.segment = segment;
        x.rank = x.last;
      },
      segment == kProtected);
}

void SlruPolicy::demote_excess() {
  const auto limit = static_cast<std::size_t>(protected_fraction_ * static_cast<double>(size()));
  while (protected_linked_ > limit) {
    auto oldest = entries_.lower_bound(SegmentKey{kProtected}, SegmentLess{});
    relink(*oldest, [&](SlruState& s) {
      s.segment = kProbation;
      s.rank = newest_tick_;
    });
    --protected_linked_;
  }
}

EvictionEntry* SlruPolicy::victim() {
  demote_excess();
  return OrderedPolicy::victim();
}

}  // namespace radixkv
