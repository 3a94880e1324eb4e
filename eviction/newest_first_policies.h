// MruPolicy and FiloPolicy: SGLang's "mru" and "filo", the newest-first counterparts of LRU and
// FIFO (sgl-project/sglang, python/sglang/srt/mem_cache/evict_policy.py). They suit workloads
// that scan: a prefix used once and never again is the newest, and goes first.
//
//   mru   evicts the leaf whose last access is newest. rank = last_access as of the latest
//         (re-)link; an access re-links a linked entry with its new stamp.
//   filo  evicts the leaf that entered the cache last. rank = inserted_at (a node split off the
//         top of another inherits its creation time); accesses change nothing.
// Both keep linked entries in OrderedPolicy's set, largest rank first; equal ranks leave in the
// order they were linked. O(log n) per operation. The victim stays first while it loses pages.
#pragma once

#include "eviction/ordered_policy.h"

namespace radixkv {

struct ByRankNewestFirst {
  bool operator()(const EvictionEntry& a, const EvictionEntry& b) const { return a.rank > b.rank; }
};

class MruPolicy final : public OrderedPolicy<ByRankNewestFirst> {
 public:
  std::string_view name() const override { return "mru"; }
  void add(EvictionEntry& entry) override {
    entry.rank = entry.last_access;
    link(entry);
  }
  void on_access(EvictionEntry& entry, const AccessHint&) override {
    if (contains(entry)) relink(entry, [](EvictionEntry& e) { e.rank = e.last_access; });
  }
  bool victim_stays_first() const override { return true; }
};

class FiloPolicy final : public OrderedPolicy<ByRankNewestFirst> {
 public:
  std::string_view name() const override { return "filo"; }
  void add(EvictionEntry& entry) override {
    entry.rank = entry.inserted_at;
    link(entry);
  }
  void on_access(EvictionEntry&, const AccessHint&) override {}
  bool victim_stays_first() const override { return true; }
};

}  // namespace radixkv
