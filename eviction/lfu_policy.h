// LfuPolicy: evicts the leaf with the fewest hits, the least recently used among equals.
//
// State: the entry's hit count (every access along a path, pinned or not, counts) and the tick of
// its last access, which are also its keys (hits, then rank = last access): kept current while
// the entry is unlinked and re-keyed by relinking while it is linked. A parent that becomes a leaf
// brings the hits it gathered as an inner node. No aging: a once-popular prefix stays until
// everything colder is gone (see gdsf for aging). O(log n) per operation.
#pragma once

#include "eviction/ordered_policy.h"

namespace radixkv {

struct LfuState {
  SetHook hook;
  uint64_t rank = 0;  // tick of the last access
  uint64_t hits = 0;
};

struct ByHitsThenRank {
  bool operator()(const LfuState& a, const LfuState& b) const {
    return a.hits != b.hits ? a.hits < b.hits : a.rank < b.rank;
  }
};

class LfuPolicy final : public OrderedPolicy<LfuState, ByHitsThenRank> {
 public:
  std::string_view name() const override { return "lfu"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override;
  AccessHistory history(const EvictionEntry& entry) const override;
  void add(EvictionEntry& entry) override { link(state(entry)); }
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;
  uint64_t hits(const EvictionEntry& entry) const { return state(entry).hits; }
};

}  // namespace radixkv
