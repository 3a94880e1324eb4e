// FifoPolicy: evicts the leaf that entered the cache first; accesses change nothing.
//
// Key: rank = the creation time (AccessHistory::created: the tree's clock when the node was made;
// a node split off the top of another inherits its creation time); equal ranks leave in link
// order. A new leaf is the newest node, so it joins the back of RankQueuePolicy's queue (O(1)). A
// parent that becomes a leaf, or a leaf unpinned after a request, goes back to the place its age
// gives it rather than to the end, in the ordered set beside the queue (O(log n) in the entries
// linked out of order). O(1) per access.
#pragma once

#include "eviction/rank_queue_policy.h"

namespace radixkv {

class FifoPolicy final : public RankQueuePolicy {
 public:
  std::string_view name() const override { return "fifo"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override {
    make_state<QueueState>(entry).rank = past.created;
  }
  AccessHistory history(const EvictionEntry& entry) const override {
    AccessHistory past;
    past.created = state(entry).rank;
    return past;
  }
  void add(EvictionEntry& entry) override { link(state(entry)); }
  void on_access(EvictionEntry&, const AccessHint&) override {}
};

}  // namespace radixkv
