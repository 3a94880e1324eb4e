// SlruPolicy: segmented LRU with a probation and a protected segment.
//
// A new leaf enters probation. An entry accessed again after its creation (hits >= 2) is promoted
// to protected, linked or not: an inner node that is hit joins protected when it becomes a leaf.
// The protected segment holds at most `protected_fraction` of the linked entries (counted in
// entries, not pages: the tree shrinks a victim's pages without telling the policy); the excess
// is demoted, least recent first, to the most recent end of probation. Victims come from the LRU
// end of probation, and from protected only when probation is empty.
//
// State: the entry's hits (counted up to 2^32 - 1) and the tick of its last access; keys: segment
// (0 probation, 1 protected), then rank = last access as of the last link, or for a demoted entry
// the newest tick seen. A past adopted (AccessHistory) brings its hits and last tick and starts in
// probation, promoted at its next access if hit before. O(log n) per operation; each demotion is
// paid for by a promotion.
#pragma once

#include <cstdint>

#include "eviction/ordered_policy.h"

namespace radixkv {

struct SlruState {
  SetHook hook;
  uint64_t rank = 0;  // key: the last access as of the last link, or the demotion's newest tick
  uint64_t last = 0;  // tick of the last access
  uint32_t hits = 0;
  uint8_t segment = 0;
};

class SlruPolicy final : public OrderedPolicy<SlruState, BySegmentThenRank> {
 public:
  static constexpr uint8_t kProbation = 0;
  static constexpr uint8_t kProtected = 1;
  // protected_fraction in [0, 1]; throws std::invalid_argument otherwise.
  explicit SlruPolicy(double protected_fraction = 0.8);
  std::string_view name() const override { return "slru"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override;
  AccessHistory history(const EvictionEntry& entry) const override;
  void add(EvictionEntry& entry) override;
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;
  EvictionEntry* victim() override;
  std::size_t protected_size() const { return protected_linked_; }
  uint8_t segment(const EvictionEntry& entry) const { return state(entry).segment; }

 private:
  void on_unlink(SlruState& s) override {
    if (s.segment == kProtected) --protected_linked_;
  }
  void demote_excess();

  double protected_fraction_;
  std::size_t protected_linked_ = 0;
  uint64_t newest_tick_ = 0;
};

}  // namespace radixkv
