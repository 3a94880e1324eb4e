// LruPolicy: evicts the leaf whose last access is oldest.
//
// Entries are ordered by rank = their last_access as of their latest (re-)link. An access stamps
// the newest tick, so re-linking a touched entry is an insert at the end (O(1) amortised), and
// the victim is the first entry (O(1)). A parent that becomes a leaf after its last child is
// evicted keeps its own, older stamp and goes where that stamp belongs (O(log n)): exact LRU, with
// no heap to rebuild (SGLang rebuilt one on every eviction call).
#pragma once

#include "eviction/ordered_policy.h"

namespace radixkv {

class LruPolicy final : public OrderedPolicy<ByRank> {
 public:
  std::string_view name() const override { return "lru"; }
  void add(EvictionEntry& entry) override {
    entry.rank = entry.last_access;
    link(entry);
  }
  void on_access(EvictionEntry& entry, const AccessHint&) override {
    if (!contains(entry)) return;
    // The stamp is the newest, so the end is the right place and the hint makes it O(1) amortised.
    relink(
        entry, [](EvictionEntry& e) { e.rank = e.last_access; }, /*at_end=*/true);
  }
};

}  // namespace radixkv
