// OrderedPolicy: the shared body of every policy that keeps its evictable entries in one order.
//
// Each entry's state (eviction/eviction_entry.h) is a `State` of the derived policy's, which
// holds the link (`SetHook hook`), the keys `Less` orders by, and whatever else the policy keeps
// of the entry. Linked states sit in an intrusive red-black tree ordered by `Less`; a linked
// state's keys change only through relink(). The victim is the first entry: O(1). Linking,
// unlinking and re-keying are O(log n), or O(1) amortised when the new key is the largest (the
// `at_end` hint). A derived policy decides the keys; this class keeps the set and answers
// state_bytes(), contains(), size(), victim() and next_victim_after() (the next entry in the set:
// amortised O(1)).
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

template <typename State, typename Less>
class OrderedPolicy : public EvictionPolicy {
 public:
  ~OrderedPolicy() override { entries_.clear(); }
  std::size_t state_bytes() const override { return sizeof(State); }
  void remove(EvictionEntry& entry) override {
    State& s = state(entry);
    on_unlink(s);
    entries_.erase(entries_.iterator_to(s));
  }
  EvictionEntry* victim() override {
    return entries_.empty() ? nullptr : &entry_of(*entries_.begin());
  }
  const EvictionEntry* next_victim_after(const EvictionEntry& entry) const override {
    const auto next = std::next(entries_.iterator_to(state(entry)));
    return next == entries_.end() ? nullptr : &entry_of(*next);
  }
  bool contains(const EvictionEntry& entry) const override { return state(entry).hook.is_linked(); }
  std::size_t size() const override { return entries_.size(); }

 protected:
  using Set =
      boost::intrusive::multiset<State, boost::intrusive::member_hook<State, SetHook, &State::hook>,
                                 boost::intrusive::compare<Less>,
                                 boost::intrusive::constant_time_size<true>>;

  static State& state(EvictionEntry& entry) { return state_of<State>(entry); }
  static const State& state(const EvictionEntry& entry) { return state_of<State>(entry); }

  // Links a state whose keys are already set. Equal keys keep arrival order.
  void link(State& s, bool at_end = false) {
    if (at_end) {
      entries_.insert(entries_.end(), s);
    } else {
      entries_.insert(s);
    }
  }
  // Unlinks a linked state, lets `rekey` change its keys, and links it again.
  template <typename Rekey>
  void relink(State& s, Rekey&& rekey, bool at_end = false) {
    entries_.erase(entries_.iterator_to(s));
    rekey(s);
    link(s, at_end);
  }
  // Called by remove() before the state leaves the set, for policies that keep counts.
  virtual void on_unlink(State&) {}

  Set entries_;
};

// Orders shared by several policies, over any State with the fields they name; each breaks ties
// by rank.
struct ByRank {
  template <typename State>
  bool operator()(const State& a, const State& b) const {
    return a.rank < b.rank;
  }
};
struct ByScoreThenRank {
  template <typename State>
  bool operator()(const State& a, const State& b) const {
    return a.score != b.score ? a.score < b.score : a.rank < b.rank;
  }
};
struct BySegmentThenRank {
  template <typename State>
  bool operator()(const State& a, const State& b) const {
    return a.segment != b.segment ? a.segment < b.segment : a.rank < b.rank;
  }
};

// For sets ordered BySegmentThenRank: the oldest entry of a segment is
// entries_.lower_bound(SegmentKey{segment}, SegmentLess{}).
struct SegmentKey {
  uint8_t segment;
};
struct SegmentLess {
  template <typename State>
  bool operator()(const State& a, SegmentKey b) const {
    return a.segment < b.segment;
  }
  template <typename State>
  bool operator()(SegmentKey a, const State& b) const {
    return a.segment < b.segment;
  }
};

// The past as LFU and GDSF keep it: the hits, and the tick of the last access as the rank.
template <typename State>
void adopt_hits_and_tick(State& s, const AccessHistory& past) {
  s.hits = past.hits;
  s.rank = past.last.tick;
}
template <typename State>
AccessHistory hits_and_tick(const State& s) {
  AccessHistory past;
  past.hits = s.hits;
  past.last.tick = s.rank;
  return past;
}

// A hit count that stops at its largest value rather than wrapping to 0 (for the policies that
// only ask whether an entry was hit again).
inline uint32_t saturated_hits(uint64_t hits) {
  return hits > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(hits);
}

}  // namespace radixkv
