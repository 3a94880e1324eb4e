// RankQueuePolicy: the shared body of the policies ordered by rank alone whose new ranks are
// mostly the largest yet (LRU: an access stamps the newest tick; FIFO: a new leaf is the newest
// node).
//
// The order is the one OrderedPolicy<ByRank> keeps: rank, then arrival (the order of (re-)links),
// so equal ranks leave in the order they were linked. It is kept in two intrusive containers:
//   - queue_ (EvictionEntry::list_hook): entries linked in rank order, each appended at the back.
//     Linking, unlinking and naming the first are O(1), and touch no entry but the neighbours (a
//     red-black tree's erase rebalances through nodes anywhere in memory).
//   - late_ (EvictionEntry::set_hook): an ordered set for the rest, the entries linked out of
//     order (LRU: a parent that becomes a leaf with its older stamp, a leaf unpinned after its
//     request; FIFO: the same by age). O(log n) in their number.
// An entry joins queue_ iff its rank is >= the rank at queue_'s back and > every rank in late_.
// Invariants:
//   1. queue_'s ranks do not decrease from front to back; equal ranks are in arrival order.
//   2. late_ is in (rank, arrival) order: a multiset puts a new entry after its equals.
//   3. If an entry of queue_ and one of late_ have equal ranks, the one in queue_ arrived first
//      (had it come after, its rank would not have been > every rank in late_).
// So the first entry of the whole order is the front of queue_ unless late_'s first ranks strictly
// lower, and next_victim_after() merges the two the same way.
#pragma once

#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>

#include "eviction/eviction_policy.h"
#include "eviction/ordered_policy.h"  // ByRank

namespace radixkv {

class RankQueuePolicy : public EvictionPolicy {
 public:
  ~RankQueuePolicy() override;
  void remove(EvictionEntry& entry) override;
  EvictionEntry* victim() override;
  // O(1) after an entry of queue_ when late_ is empty, else O(log n) in late_'s size; after an
  // entry of late_, O(k) in the entries of queue_ ranked at or below it (the victims named before
  // it), giving up (nullptr) past kMaxScan of them.
  const EvictionEntry* next_victim_after(const EvictionEntry& entry) const override;
  bool contains(const EvictionEntry& entry) const override {
    return entry.list_hook.is_linked() || entry.set_hook.is_linked();
  }
  std::size_t size() const override { return queue_.size() + late_.size(); }
  // Entries linked out of order, for the tests and benchmarks that check which path ran.
  std::size_t late_size() const { return late_.size(); }

 protected:
  // Links an unlinked entry whose rank is already set.
  void link(EvictionEntry& entry);

 private:
  static constexpr int kMaxScan = 64;

  using Queue =
      boost::intrusive::list<EvictionEntry,
                             boost::intrusive::member_hook<EvictionEntry, EvictionEntry::ListHook,
                                                           &EvictionEntry::list_hook>,
                             boost::intrusive::constant_time_size<true>>;
  using Late = boost::intrusive::multiset<
      EvictionEntry,
      boost::intrusive::member_hook<EvictionEntry, EvictionEntry::SetHook,
                                    &EvictionEntry::set_hook>,
      boost::intrusive::compare<ByRank>, boost::intrusive::constant_time_size<true>>;

  Queue queue_;
  Late late_;
};

}  // namespace radixkv
