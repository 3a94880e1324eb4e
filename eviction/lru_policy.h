// LruPolicy: evicts the leaf whose last access is oldest.
//
// Entries sit in an intrusive red-black tree ordered by last_access (ties by arrival). An access
// stamps the newest tick, so re-linking a touched entry is an insert at the end (O(1) amortised),
// and the victim is the leftmost node (O(1)). A parent that becomes a leaf after its last child is
// evicted keeps its own, older stamp and goes where that stamp belongs (O(log n)): exact LRU, with
// no heap to rebuild (SGLang rebuilt one on every eviction call).
#pragma once

#include <boost/intrusive/set.hpp>

#include "eviction/eviction_policy.h"

namespace radixkv {

class LruPolicy final : public EvictionPolicy {
 public:
  ~LruPolicy() override { entries_.clear(); }
  std::string_view name() const override { return "lru"; }
  void add(EvictionEntry& entry) override;
  void remove(EvictionEntry& entry) override;
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;
  EvictionEntry* victim() override;
  bool contains(const EvictionEntry& entry) const override { return entry.set_hook.is_linked(); }
  std::size_t size() const override { return entries_.size(); }

 private:
  // rank holds the entry's last_access as of its latest (re-)link.
  struct ByRank {
    bool operator()(const EvictionEntry& a, const EvictionEntry& b) const { return a.rank < b.rank; }
  };
  using Set = boost::intrusive::multiset<
      EvictionEntry,
      boost::intrusive::member_hook<EvictionEntry, EvictionEntry::SetHook, &EvictionEntry::set_hook>,
      boost::intrusive::compare<ByRank>, boost::intrusive::constant_time_size<true>>;
  Set entries_;
};

}  // namespace radixkv
