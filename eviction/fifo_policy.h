// FifoPolicy: evicts the leaf that entered the cache first; accesses change nothing.
//
// Key: rank = inserted_at, the tree's clock when the node was created (a node split off the top
// of another inherits its creation time); equal ranks leave in link order. A new leaf is the
// newest node, so it joins the back of RankQueuePolicy's queue (O(1)). A parent that becomes a
// leaf, or a leaf unpinned after a request, goes back to the place its age gives it rather than
// to the end, in the ordered set beside the queue (O(log n) in the entries linked out of order).
// O(1) per access.
#pragma once

#include "eviction/rank_queue_policy.h"

namespace radixkv {

class FifoPolicy final : public RankQueuePolicy {
 public:
  std::string_view name() const override { return "fifo"; }
  void add(EvictionEntry& entry) override {
    entry.rank = entry.inserted_at;
    link(entry);
  }
  void on_access(EvictionEntry&, const AccessHint&) override {}
};

}  // namespace radixkv
