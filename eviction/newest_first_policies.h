// MruPolicy and FiloPolicy: SGLang's "mru" and "filo", the newest-first counterparts of LRU and
// FIFO (sgl-project/sglang, python/sglang/srt/mem_cache/evict_policy.py). They suit workloads
// that scan: a prefix used once and never again is the newest, and goes first.
//
//   mru   evicts the leaf whose last access is newest. rank = the tick of its last access (kept
//         current while the entry is unlinked; an access re-links a linked entry).
//   filo  evicts the leaf that entered the cache last. rank = its creation tick (a node split off
//         the top of another adopts its creation); accesses change nothing.
// Both keep linked entries in OrderedPolicy's set, largest rank first; equal ranks leave in the
// order they were linked. State: the hook and the rank (32 bytes). O(log n) per operation. The
// victim stays first while it loses pages.
#pragma once

#include "eviction/ordered_policy.h"

namespace radixkv {

struct NewestFirstState {
  SetHook hook;
  uint64_t rank = 0;
};

struct ByRankNewestFirst {
  bool operator()(const NewestFirstState& a, const NewestFirstState& b) const {
    return a.rank > b.rank;
  }
};

class MruPolicy final : public OrderedPolicy<NewestFirstState, ByRankNewestFirst> {
 public:
  std::string_view name() const override { return "mru"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override {
    make_state<NewestFirstState>(entry).rank = past.last.tick;
  }
  AccessHistory history(const EvictionEntry& entry) const override {
    AccessHistory past;
    past.last.tick = state(entry).rank;
    return past;
  }
  void add(EvictionEntry& entry) override { link(state(entry)); }
  void on_access(EvictionEntry& entry, const AccessHint& hint) override {
    NewestFirstState& s = state(entry);
    if (s.hook.is_linked()) {
      relink(s, [&](NewestFirstState& x) { x.rank = hint.tick; });
    } else {
      s.rank = hint.tick;
    }
  }
  bool victim_stays_first() const override { return true; }
};

class FiloPolicy final : public OrderedPolicy<NewestFirstState, ByRankNewestFirst> {
 public:
  std::string_view name() const override { return "filo"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override {
    make_state<NewestFirstState>(entry).rank = past.created;
  }
  AccessHistory history(const EvictionEntry& entry) const override {
    AccessHistory past;
    past.created = state(entry).rank;
    return past;
  }
  void add(EvictionEntry& entry) override { link(state(entry)); }
  void on_access(EvictionEntry&, const AccessHint&) override {}
  bool victim_stays_first() const override { return true; }
};

}  // namespace radixkv
