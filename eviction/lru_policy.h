// LruPolicy: evicts the leaf whose last access is oldest.
//
// rank = the entry's last_access as of its latest (re-)link; equal ranks leave in link order.
// An access stamps the newest tick, so a touched entry is re-linked at the back of
// RankQueuePolicy's queue (O(1)), and the victim is its front (O(1)). A parent that becomes a leaf
// after its last child is evicted keeps its own, older stamp, and so does a leaf unpinned after
// its request: they go where that stamp belongs, in the ordered set beside the queue
// (O(log n) in the entries linked out of order): exact LRU, with no heap to rebuild (SGLang
// rebuilt one on every eviction call).
#pragma once

#include "eviction/rank_queue_policy.h"

namespace radixkv {

class LruPolicy final : public RankQueuePolicy {
 public:
  std::string_view name() const override { return "lru"; }
  void add(EvictionEntry& entry) override {
    entry.rank = entry.last_access;
    link(entry);
  }
  void on_access(EvictionEntry& entry, const AccessHint&) override {
    if (!contains(entry)) return;
    remove(entry);
    add(entry);
  }
};

}  // namespace radixkv
