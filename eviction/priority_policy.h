// PriorityPolicy: TensorRT-LLM's retention priorities. The lowest priority leaves go first, the
// least recently used first within a priority; a priority holds for `retention` seconds after the
// access that set it, after which the entry falls back to the default priority (35).
//
// Priority of an entry = the priority of its latest access (AccessHint::priority, clamped to
// [kMinPriority, kMaxPriority]); its age is measured on the caller's clock (AccessHint::now).
// TensorRT-LLM gives each request its own duration; here one duration serves every access, which
// is what keeps expiry O(1) amortised (see below). Infinite retention (the default) never expires.
//
// State: the latest access's priority (clamped), its tick and its time on the caller's clock
// (`stamp`, max'ed with every earlier time so that it never goes back); keys: segment = the
// effective priority as of the last link, rank = the tick of the last access. A past adopted
// (AccessHistory) brings its priority and tick; its time starts afresh (the priority counts as
// expired until the next access), as the policy keeps its own clock. Within one priority, entries
// are in tick order and so also in time order: the first of each priority is the next to expire.
// victim() first demotes the expired heads of every priority that has linked entries (a count per
// priority tells which), each demotion paid for by the access that set the priority. O(log n) per
// operation; victim() adds a fixed 101-count scan and one O(log n) look-up per non-default priority
// in use.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "eviction/ordered_policy.h"

namespace radixkv {

struct PriorityState {
  SetHook hook;
  uint64_t rank = 0;   // tick of the last access
  double stamp = 0.0;  // its time on the caller's clock (0: none seen since adopt)
  uint8_t priority = kDefaultPriority;
  uint8_t segment = kDefaultPriority;
};

class PriorityPolicy final : public OrderedPolicy<PriorityState, BySegmentThenRank> {
 public:
  static constexpr double kForever = std::numeric_limits<double>::infinity();
  // retention_seconds: > 0 (or kForever); throws std::invalid_argument otherwise.
  explicit PriorityPolicy(double retention_seconds = kForever);
  std::string_view name() const override { return "priority"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override;
  AccessHistory history(const EvictionEntry& entry) const override;
  void add(EvictionEntry& entry) override;
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;
  EvictionEntry* victim() override;
  double retention_seconds() const { return retention_; }

 private:
  void on_unlink(PriorityState& s) override { --linked_at_[s.segment]; }
  uint8_t effective_priority(const PriorityState& s) const;
  void set_key(PriorityState& s);
  void demote_expired();

  double retention_;
  double now_ = 0.0;                                    // latest AccessHint::now seen
  std::array<uint32_t, kMaxPriority + 1> linked_at_{};  // linked entries per effective priority
};

}  // namespace radixkv
