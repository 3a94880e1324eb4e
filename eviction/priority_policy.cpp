#include "eviction/priority_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace radixkv {

namespace {

uint8_t clamped(int32_t priority) {
  return static_cast<uint8_t>(std::clamp(priority, kMinPriority, kMaxPriority));
}

}  // namespace

PriorityPolicy::PriorityPolicy(double retention_seconds) : retention_(retention_seconds) {
  if (!(retention_seconds > 0.0)) {
    throw std::invalid_argument(fmt::format(
        "priority policy: retention of {} seconds must be positive (or inf)", retention_seconds));
  }
}

// The time of the past's last access is the policy's own (its clock never goes back), so it starts
// afresh: until the entry's next access, its priority counts as expired.
void PriorityPolicy::adopt(EvictionEntry& entry, const AccessHistory& past) {
  PriorityState& s = make_state<PriorityState>(entry);
  s.priority = clamped(past.last.priority);
  s.rank = past.last.tick;
}

AccessHistory PriorityPolicy::history(const EvictionEntry& entry) const {
  AccessHistory past;
  past.last.priority = state(entry).priority;
  past.last.tick = state(entry).rank;
  return past;
}

uint8_t PriorityPolicy::effective_priority(const PriorityState& s) const {
  if (s.stamp + retention_ <= now_) return kDefaultPriority;
  return s.priority;
}

void PriorityPolicy::set_key(PriorityState& s) {
  s.segment = effective_priority(s);
  ++linked_at_[s.segment];
}

void PriorityPolicy::add(EvictionEntry& entry) {
  PriorityState& s = state(entry);
  set_key(s);
  link(s);
}

void PriorityPolicy::on_access(EvictionEntry& entry, const AccessHint& hint) {
  now_ = std::max(now_, hint.now);
  const auto note = [&](PriorityState& s) {
    s.stamp = now_;
    s.priority = clamped(hint.priority);
    s.rank = hint.tick;
  };
  PriorityState& s = state(entry);
  if (!s.hook.is_linked()) {
    note(s);
    return;
  }
  relink(s, [&](PriorityState& x) {
    --linked_at_[x.segment];
    note(x);
    set_key(x);
  });
}

void PriorityPolicy::demote_expired() {
  if (retention_ == kForever) return;
  for (int p = kMinPriority; p <= kMaxPriority; ++p) {
    if (p == kDefaultPriority) continue;
    while (linked_at_[p] > 0) {
      auto first = entries_.lower_bound(SegmentKey{static_cast<uint8_t>(p)}, SegmentLess{});
      if (first->stamp + retention_ > now_) break;
      relink(*first, [&](PriorityState& s) {
        --linked_at_[s.segment];
        s.segment = kDefaultPriority;
        ++linked_at_[s.segment];
      });
    }
  }
}

EvictionEntry* PriorityPolicy::victim() {
  demote_expired();
  return OrderedPolicy::victim();
}

}  // namespace radixkv
