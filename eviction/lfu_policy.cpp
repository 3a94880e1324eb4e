#include "eviction/lfu_policy.h"

namespace radixkv {

void LfuPolicy::key(EvictionEntry& entry) {
  entry.score = static_cast<double>(entry.hits);
  entry.rank = entry.last_access;
}

void LfuPolicy::add(EvictionEntry& entry) {
  key(entry);
  link(entry);
}

void LfuPolicy::on_access(EvictionEntry& entry, const AccessHint&) {
  if (contains(entry)) relink(entry, key);
}

}  // namespace radixkv
