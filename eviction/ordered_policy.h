// OrderedPolicy: the shared body of every policy that keeps its evictable entries in one order.
//
// Entries sit in an intrusive red-black tree (EvictionEntry::set_hook) ordered by `Less`, which
// must compare policy-owned fields only (rank, score, segment), never the facts the owner rewrites
// while an entry is linked. The victim is the first entry: O(1). Linking, unlinking and re-keying
// are O(log n), or O(1) amortised when the new key is the largest (the `at_end` hint). A derived
// policy decides the keys; this class keeps the set and answers contains(), size(), victim() and
// next_victim_after() (the next entry in the set: amortised O(1)).
//
// next_victim_after() is exact for a derived victim() that re-keys nothing the removals in
// between could change: GDSF's inflation and the reuse estimates only key later links; SLRU's
// demotion moves the oldest protected entry to the end of probation, the same place in the
// order; priority expiry runs again only once the caller's clock moves, which takes an access.
#pragma once

#include <boost/intrusive/set.hpp>

#include <iterator>

#include "eviction/eviction_policy.h"

namespace radixkv {

template <typename Less>
class OrderedPolicy : public EvictionPolicy {
 public:
  ~OrderedPolicy() override { entries_.clear(); }
  void remove(EvictionEntry& entry) override {
    on_unlink(entry);
    entries_.erase(entries_.iterator_to(entry));
  }
  EvictionEntry* victim() override { return entries_.empty() ? nullptr : &*entries_.begin(); }
  const EvictionEntry* next_victim_after(const EvictionEntry& entry) const override {
    const auto next = std::next(entries_.iterator_to(entry));
    return next == entries_.end() ? nullptr : &*next;
  }
  bool contains(const EvictionEntry& entry) const override { return entry.set_hook.is_linked(); }
  std::size_t size() const override { return entries_.size(); }

 protected:
  using Set = boost::intrusive::multiset<
      EvictionEntry,
      boost::intrusive::member_hook<EvictionEntry, EvictionEntry::SetHook,
                                    &EvictionEntry::set_hook>,
      boost::intrusive::compare<Less>, boost::intrusive::constant_time_size<true>>;

  // Links an entry whose keys are already set. Equal keys keep arrival order.
  void link(EvictionEntry& entry, bool at_end = false) {
    if (at_end) {
      entries_.insert(entries_.end(), entry);
    } else {
      entries_.insert(entry);
    }
  }
  // Unlinks a linked entry, lets `rekey` change its keys, and links it again.
  template <typename Rekey>
  void relink(EvictionEntry& entry, Rekey&& rekey, bool at_end = false) {
    entries_.erase(entries_.iterator_to(entry));
    rekey(entry);
    link(entry, at_end);
  }
  // Called by remove() before the entry leaves the set, for policies that keep counts.
  virtual void on_unlink(EvictionEntry&) {}

  Set entries_;
};

// Orders shared by several policies; each breaks ties by rank.
struct ByRank {
  bool operator()(const EvictionEntry& a, const EvictionEntry& b) const { return a.rank < b.rank; }
};
struct ByScoreThenRank {
  bool operator()(const EvictionEntry& a, const EvictionEntry& b) const {
    return a.score != b.score ? a.score < b.score : a.rank < b.rank;
  }
};
struct BySegmentThenRank {
  bool operator()(const EvictionEntry& a, const EvictionEntry& b) const {
    return a.segment != b.segment ? a.segment < b.segment : a.rank < b.rank;
  }
};

// For sets ordered BySegmentThenRank: the oldest entry of a segment is
// entries_.lower_bound(SegmentKey{segment}, SegmentLess{}).
struct SegmentKey {
  uint8_t segment;
};
struct SegmentLess {
  bool operator()(const EvictionEntry& a, SegmentKey b) const { return a.segment < b.segment; }
  bool operator()(SegmentKey a, const EvictionEntry& b) const { return a.segment < b.segment; }
};

}  // namespace radixkv
