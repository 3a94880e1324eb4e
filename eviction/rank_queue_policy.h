// RankQueuePolicy: the shared body of the policies ordered by rank alone whose new ranks are
// mostly the largest yet (LRU: an access stamps the newest tick; FIFO: a new leaf is the newest
// node).
//
// The order is the one OrderedPolicy<ByRank> keeps: rank, then arrival (the order of (re-)links),
// so equal ranks leave in the order they were linked. It is kept in two containers:
//   - the queue: entries linked in rank order, each appended at the back of a ring of pointers to
//     their states (slot of position p: ring_[p mod capacity]; an entry keeps its position in
//     QueueState::queue_position, 0 when it is not queued). Removing one empties its slot; empty
//     slots at either end are dropped at once, the ones between are skipped. Linking, unlinking and
//     naming the first are O(1) amortised and touch no other entry; and since the order lies in
//     one array, the victims ahead are known without reading the victims before them (an
//     intrusive list must be walked node by node, one cache miss after another: at 10^6 leaves
//     that walk was most of eviction's time; bench/README.md).
//   - late_ (QueueState::hook): an ordered set for the rest, the entries linked out of
//     order (LRU: a parent that becomes a leaf with its older stamp, a leaf unpinned after its
//     request; FIFO: the same by age). O(log n) in their number.
// An entry joins the queue iff its rank is >= the rank at the queue's back and > every rank in
// late_. Invariants:
//   1. The queue's ranks do not decrease from front to back; equal ranks are in arrival order.
//   2. late_ is in (rank, arrival) order: a multiset puts a new entry after its equals.
//   3. If an entry of the queue and one of late_ have equal ranks, the queued one arrived first
//      (had it come after, its rank would not have been > every rank in late_).
//   4. Positions [head_, tail_) are in the ring; the slots at head_ and tail_ - 1 hold entries
//      (unless the queue is empty, head_ == tail_); every entry in between sits in the slot of its
//      queue_position.
// So the first entry of the whole order is the queue's front unless late_'s first ranks strictly
// lower, and next_victim_after() merges the two the same way.
// Memory: the ring is full only when it holds twice as many slots as entries or more, and then it
// is compacted (every queued entry gets a new position: O(n), once per n/2 links at least) rather
// than grown; it grows (doubling) otherwise, so it has at most four slots per queued entry (8
// bytes each). If the memory to grow is not there the entry goes to late_ instead, which is as
// exact: add() never throws.
// State per entry (QueueState, 40 bytes): the hook, the queue position and the rank; what the rank
// means (LRU: the tick of the last access; FIFO: the creation time) is the derived policy's.
#pragma once

#include <boost/intrusive/set.hpp>

#include <cstdint>
#include <vector>

#include "eviction/eviction_policy.h"
#include "eviction/ordered_policy.h"  // ByRank

namespace radixkv {

struct QueueState {
  SetHook hook;                 // in late_
  uint64_t queue_position = 0;  // in the queue (0: not there)
  uint64_t rank = 0;
};

class RankQueuePolicy : public EvictionPolicy {
 public:
  ~RankQueuePolicy() override;
  std::size_t state_bytes() const override { return sizeof(QueueState); }
  void remove(EvictionEntry& entry) override;
  EvictionEntry* victim() override;
  // After a queued entry: reads no entry when late_ is empty and `entry` is the one this call
  // named last (walking the order ahead), else `entry` itself; skips up to kMaxSkip empty slots,
  // giving up (nullptr) past them. Merging with late_ costs O(log n) in its size. After an entry
  // of late_, O(k) in the queued entries ranked at or below it (the victims named before it),
  // giving up past kMaxScan of them.
  const EvictionEntry* next_victim_after(const EvictionEntry& entry) const final;
  // While late_ is empty, a scan of the ring from `entry`'s position; otherwise entry by entry.
  std::size_t next_victims_after(const EvictionEntry& entry,
                                 std::span<const EvictionEntry*> out) const final;
  // The order is by rank alone, and victim() records nothing.
  bool victim_stays_first() const final { return true; }
  bool contains(const EvictionEntry& entry) const override { return linked(state(entry)); }
  std::size_t size() const override { return queued_ + late_.size(); }
  // Entries linked out of order, and the ring's slots, for the tests and benchmarks that check
  // which path ran and what the queue holds.
  std::size_t late_size() const { return late_.size(); }
  std::size_t ring_capacity() const { return ring_.size(); }

 protected:
  static QueueState& state(EvictionEntry& entry) { return state_of<QueueState>(entry); }
  static const QueueState& state(const EvictionEntry& entry) { return state_of<QueueState>(entry); }
  static bool linked(const QueueState& s) { return s.queue_position != 0 || s.hook.is_linked(); }
  // Links an unlinked entry whose rank is already set.
  void link(QueueState& s);

 private:
  static constexpr int kMaxScan = 64;
  static constexpr int kMaxSkip = 256;
  static constexpr std::size_t kMinRing = 16;

  using Late = boost::intrusive::multiset<
      QueueState, boost::intrusive::member_hook<QueueState, SetHook, &QueueState::hook>,
      boost::intrusive::compare<ByRank>, boost::intrusive::constant_time_size<true>>;

  QueueState*& slot(uint64_t position) { return ring_[position & (ring_.size() - 1)]; }
  QueueState* slot(uint64_t position) const { return ring_[position & (ring_.size() - 1)]; }
  const QueueState* back() const { return queued_ > 0 ? slot(tail_ - 1) : nullptr; }
  // The position of the first queued entry after position p; 0 when there is none; kGaveUp when
  // more than kMaxSkip empty slots come first (there may be one further on: next_victim_after then
  // cannot tell, and must not name a later entry of late_ instead).
  static constexpr uint64_t kGaveUp = ~uint64_t{0};
  uint64_t queued_after(uint64_t p) const;
  // The queue position of a linked entry: where next_victim_after() named it last (without
  // reading it), else its own (0: in late_).
  uint64_t position_of(const QueueState& s) const;
  // Makes room for one more slot at the back; false when the memory to grow is not there.
  bool make_room();
  void compact();

  std::vector<QueueState*> ring_;  // a power of two slots, or none
  uint64_t head_ = 1;              // positions start at 1: 0 means "not queued"
  uint64_t tail_ = 1;
  std::size_t queued_ = 0;
  // The entry next_victim_after() named last and its position, so that walking the order ahead
  // reads the ring, not the entries (whose lines are still on their way: VictimLookahead).
  mutable const QueueState* named_ = nullptr;
  mutable uint64_t named_at_ = 0;
  Late late_;
};

}  // namespace radixkv
