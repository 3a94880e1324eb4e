#include "eviction/lfu_policy.h"

namespace radixkv {

void LfuPolicy::adopt(EvictionEntry& entry, const AccessHistory& past) {
  LfuState& s = make_state<LfuState>(entry);
  s.hits = past.hits;
  s.rank = past.last.tick;
}

AccessHistory LfuPolicy::history(const EvictionEntry& entry) const {
  AccessHistory past;
  past.hits = state(entry).hits;
  past.last.tick = state(entry).rank;
  return past;
}

void LfuPolicy::on_access(EvictionEntry& entry, const AccessHint& hint) {
  const auto count = [&](LfuState& s) {
    ++s.hits;
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
