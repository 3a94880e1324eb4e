#include "eviction/sieve_policy.h"

namespace radixkv {

namespace {

struct RankLess {
  bool operator()(const EvictionEntry& a, uint64_t b) const { return a.rank < b; }
  bool operator()(uint64_t a, const EvictionEntry& b) const { return a < b.rank; }
};

}  // namespace

EvictionEntry* SievePolicy::victim() {
  if (entries_.empty()) return nullptr;
  auto it = entries_.lower_bound(hand_, RankLess{});
  if (it == entries_.end()) it = entries_.begin();
  // Ends within one lap plus one entry: a lap clears every bit.
  while (it->visited) {
    it->visited = false;
    if (++it == entries_.end()) it = entries_.begin();
  }
  hand_ = it->rank;
  return &*it;
}

}  // namespace radixkv
