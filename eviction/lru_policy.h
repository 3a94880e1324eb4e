// LruPolicy: evicts the leaf whose last access is oldest.
//
// rank = the tick of the entry's last access (kept current while the entry is unlinked; a linked
// entry is re-linked); equal ranks leave in link order. An access stamps the newest tick, so a
// touched entry is re-linked at the back of RankQueuePolicy's queue (O(1)), and the victim is its
// front (O(1)). A parent that becomes a leaf after its last child is evicted keeps its own, older
// stamp, and so does a leaf unpinned after its request: they go where that stamp belongs, in the
// ordered set beside the queue (O(log n) in the entries linked out of order): exact LRU, with no
// heap to rebuild (SGLang rebuilt one on every eviction call).
#pragma once

#include "eviction/rank_queue_policy.h"

namespace radixkv {

class LruPolicy final : public RankQueuePolicy {
 public:
  std::string_view name() const override { return "lru"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override {
    make_state<QueueState>(entry).rank = past.last.tick;
  }
  AccessHistory history(const EvictionEntry& entry) const override {
    AccessHistory past;
    past.last.tick = state(entry).rank;
    return past;
  }
  void add(EvictionEntry& entry) override { link(state(entry)); }
  void on_access(EvictionEntry& entry, const AccessHint& hint) override {
    QueueState& s = state(entry);
    if (!linked(s)) {
      s.rank = hint.tick;
      return;
    }
    remove(entry);
    s.rank = hint.tick;
    link(s);
  }
};

}  // namespace radixkv
