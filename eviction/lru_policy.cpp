#include "eviction/lru_policy.h"

namespace radixkv {

void LruPolicy::add(EvictionEntry& entry) {
  entry.rank = entry.last_access;
  entries_.insert(entry);
}

void LruPolicy::remove(EvictionEntry& entry) { entries_.erase(entries_.iterator_to(entry)); }

void LruPolicy::on_access(EvictionEntry& entry, const AccessHint&) {
  if (!entry.set_hook.is_linked()) return;
  entries_.erase(entries_.iterator_to(entry));
  entry.rank = entry.last_access;
  // The stamp is the newest, so the end is the right place and the hint makes it O(1) amortised.
  entries_.insert(entries_.end(), entry);
}

EvictionEntry* LruPolicy::victim() { return entries_.empty() ? nullptr : &*entries_.begin(); }

}  // namespace radixkv
