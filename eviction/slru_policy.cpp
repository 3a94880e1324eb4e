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

void SlruPolicy::add(EvictionEntry& entry) {
  newest_tick_ = std::max(newest_tick_, entry.last_access);
  entry.rank = entry.last_access;
  if (entry.segment == kProtected) ++protected_linked_;
  link(entry);
}

void SlruPolicy::on_access(EvictionEntry& entry, const AccessHint&) {
  newest_tick_ = std::max(newest_tick_, entry.last_access);
  const uint8_t segment = entry.hits >= 2 ? kProtected : entry.segment;
  if (!contains(entry)) {
    entry.segment = segment;
    return;
  }
  relink(
      entry,
      [&](EvictionEntry& e) {
        if (e.segment != segment) ++protected_linked_;  // only probation -> protected happens here
        e.segment = segment;
        e.rank = e.last_access;
      },
      segment == kProtected);
}

void SlruPolicy::demote_excess() {
  const auto limit = static_cast<std::size_t>(protected_fraction_ * static_cast<double>(size()));
  while (protected_linked_ > limit) {
    auto oldest = entries_.lower_bound(SegmentKey{kProtected}, SegmentLess{});
    relink(*oldest, [&](EvictionEntry& e) {
      e.segment = kProbation;
      e.rank = newest_tick_;
    });
    --protected_linked_;
  }
}

EvictionEntry* SlruPolicy::victim() {
  demote_excess();
  return OrderedPolicy::victim();
}

}  // namespace radixkv
