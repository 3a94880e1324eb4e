#include "eviction/sieve_policy.h"

#include <iterator>

namespace radixkv {

namespace {

struct RankLess {
  bool operator()(const SieveState& a, uint64_t b) const { return a.rank < b; }
  bool operator()(uint64_t a, const SieveState& b) const { return a < b.rank; }
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
  return &entry_of(*it);
}

const EvictionEntry* SievePolicy::next_victim_after(const EvictionEntry& entry) const {
  auto it = entries_.iterator_to(state(entry));
  // victim() resumes at the first entry ranked at or after entry's rank, once entry is gone.
  if (it != entries_.begin() && std::prev(it)->rank == it->rank) return nullptr;
  for (int step = 0; step < kPeekSteps; ++step) {
    if (++it == entries_.end()) return nullptr;
    if (!it->visited) return &entry_of(*it);
  }
  return nullptr;
}

}  // namespace radixkv
