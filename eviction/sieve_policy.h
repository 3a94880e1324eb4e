// SievePolicy: SIEVE (Zhang et al., NSDI'24), adapted to leaf-only eviction.
//
// SIEVE keeps objects in insertion order with one "visited" bit each; a hit only sets the bit
// (nothing moves). A hand sweeps from the oldest towards the newest: a visited entry has its bit
// cleared and survives, the first unvisited one is the victim, and the hand stays there, wrapping
// around to the oldest at the end.
//
// Leaf-only: only linked (evictable) entries are in the queue and the hand passes only them.
// Queue position = creation time (rank = inserted_at), so a leaf unpinned after a request, or a
// parent that becomes a leaf, takes back the place its age gives it instead of jumping to the new
// end (which would turn every hit into an LRU move). visited is set by any access after creation
// (hits >= 2), linked or not, so an inner node that was used joins with its bit set. The hand is
// kept as a rank, so removing the entry under it needs no care: the next victim() resumes at the
// first entry at or after it. O(log n) to find the hand, O(1) amortised per cleared bit.
//
// State: rank (the creation time), the hits since creation (counted up to 2^32 - 1) and the
// visited bit; a past adopted (AccessHistory) brings its creation and hits, with the bit clear.
#pragma once

#include <cstdint>

#include "eviction/ordered_policy.h"

namespace radixkv {

struct SieveState {
  SetHook hook;
  uint64_t rank = 0;  // creation time
  uint32_t hits = 0;
  bool visited = false;
};

class SievePolicy final : public OrderedPolicy<SieveState, ByRank> {
 public:
  std::string_view name() const override { return "sieve"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override {
    SieveState& s = make_state<SieveState>(entry);
    s.rank = past.created;
    s.hits = saturated_hits(past.hits);
  }
  AccessHistory history(const EvictionEntry& entry) const override {
    AccessHistory past;
    past.created = state(entry).rank;
    past.hits = state(entry).hits;
    return past;
  }
  void add(EvictionEntry& entry) override { link(state(entry)); }
  void on_access(EvictionEntry& entry, const AccessHint& hint) override {
    SieveState& s = state(entry);
    if (hint.counts_as_hit && s.hits < UINT32_MAX) ++s.hits;
    if (s.hits >= 2) s.visited = true;
  }
  bool visited(const EvictionEntry& entry) const { return state(entry).visited; }
  EvictionEntry* victim() override;
  // The first unvisited entry after `entry` within kPeekSteps, without clearing bits; nullptr
  // when the hand would wrap around first, or would not resume right after `entry` (an entry of
  // the same rank before it: a split's upper node keeps its lower node's creation time).
  const EvictionEntry* next_victim_after(const EvictionEntry& entry) const override;

 private:
  static constexpr int kPeekSteps = 16;
  uint64_t hand_ = 0;  // rank the sweep resumes at
};

}  // namespace radixkv
