// FifoPolicy: evicts the leaf that entered the cache first; accesses change nothing.
//
// Key: rank = inserted_at, the tree's clock when the node was created (a node split off the top
// of another inherits its creation time). A parent that becomes a leaf, or a leaf unpinned after a
// request, goes back to the place its age gives it rather than to the end. O(log n) per link,
// O(1) per access.
#pragma once

#include "eviction/ordered_policy.h"

namespace radixkv {

class FifoPolicy final : public OrderedPolicy<ByRank> {
 public:
  std::string_view name() const override { return "fifo"; }
  void add(EvictionEntry& entry) override {
    entry.rank = entry.inserted_at;
    link(entry);
  }
  void on_access(EvictionEntry&, const AccessHint&) override {}
};

}  // namespace radixkv
