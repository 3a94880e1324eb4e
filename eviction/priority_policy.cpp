#include "eviction/priority_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace radixkv {

PriorityPolicy::PriorityPolicy(double retention_seconds) : retention_(retention_seconds) {
  if (!(retention_seconds > 0.0)) {
    throw std::invalid_argument(fmt::format(
        "priority policy: retention of {} seconds must be positive (or inf)", retention_seconds));
  }
}

uint8_t PriorityPolicy::effective_priority(const EvictionEntry& entry) const {
  if (entry.score + retention_ <= now_) return kDefaultPriority;
  return static_cast<uint8_t>(std::clamp(entry.priority, kMinPriority, kMaxPriority));
}

void PriorityPolicy::set_key(EvictionEntry& entry) {
  entry.segment = effective_priority(entry);
  entry.rank = entry.last_access;
  ++linked_at_[entry.segment];
}

void PriorityPolicy::add(EvictionEntry& entry) {
  set_key(entry);
  link(entry);
}

void PriorityPolicy::on_access(EvictionEntry& entry, const AccessHint& hint) {
  now_ = std::max(now_, hint.now);
  entry.score = now_;
  if (!contains(entry)) return;
  relink(entry, [&](EvictionEntry& e) {
    --linked_at_[e.segment];
    set_key(e);
  });
}

void PriorityPolicy::demote_expired() {
  if (retention_ == kForever) return;
  for (int p = kMinPriority; p <= kMaxPriority; ++p) {
    if (p == kDefaultPriority) continue;
    while (linked_at_[p] > 0) {
      auto first = entries_.lower_bound(SegmentKey{static_cast<uint8_t>(p)}, SegmentLess{});
      if (first->score + retention_ > now_) break;
      relink(*first, [&](EvictionEntry& e) {
        --linked_at_[e.segment];
        e.segment = kDefaultPriority;
        ++linked_at_[e.segment];
      });
    }
  }
}

EvictionEntry* PriorityPolicy::victim() {
  demote_expired();
  return OrderedPolicy::victim();
}

}  // namespace radixkv
