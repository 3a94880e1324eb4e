#include "eviction/lfu_policy.h"

namespace radixkv {

void LfuPolicy::adopt(EvictionEntry& entry, const AccessHistory& past) {
  adopt_hits_and_tick(make_state<LfuState>(entry), past);
}

AccessHistory LfuPolicy::history(const EvictionEntry& entry) const {
  return hits_and_tick(state(entry));
}

void LfuPolicy::on_access(EvictionEntry& entry, const AccessHint& hint) {
  const auto count = [&](LfuState& s) {
    if (hint.counts_as_hit) ++s.hits;
    s.rank = hint.tick;
  };
  LfuState& s = state(entry);
  if (s.hook.is_linked()) {
    relink(s, count);
  } else {
    count(s);
  }
}

}  // namespace radixkv
