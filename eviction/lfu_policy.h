// LfuPolicy: evicts the leaf with the fewest hits, the least recently used among equals.
//
// Key: score = the entry's hit count (EvictionEntry::hits, which the tree increments on every
// access along a path, pinned or not) and rank = its last access, both copied when the entry is
// linked or touched. A parent that becomes a leaf brings the hits it gathered as an inner node.
// No aging: a once-popular prefix stays until everything colder is gone (see gdsf for aging).
// O(log n) per operation.
#pragma once

#include "eviction/ordered_policy.h"

namespace radixkv {

class LfuPolicy final : public OrderedPolicy<ByScoreThenRank> {
 public:
  std::string_view name() const override { return "lfu"; }
  void add(EvictionEntry& entry) override;
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;

 private:
  static void key(EvictionEntry& entry);
};

}  // namespace radixkv
