// EvictionPolicy: the seam every policy plugs into. The tree calls it; it never calls the tree.
//
// Contract with the owner of the entries:
//   - add(e): e just became evictable (an unpinned leaf that is not a root). e is not linked.
//   - remove(e): e stops being evictable (pinned, gained a child, erased). e is linked.
//   - on_access(e, hint): e lies on a matched or inserted path, linked or not. The owner has
//     already updated e.last_access, e.hits and e.priority.
//   - victim(): the entry to evict from next, left linked; nullptr when nothing is evictable.
//     The owner asks before every page, takes that one page from the entry's tail (e.pages drops
//     by one) and calls remove() only once it holds none, so one victim may serve several calls.
// The set of linked entries is exactly the set of evictable entries; size() counts them.
// Every operation is O(1) or O(log n) in the number of linked entries.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "eviction/eviction_entry.h"

namespace radixkv {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual std::string_view name() const = 0;
  virtual void add(EvictionEntry& entry) = 0;
  virtual void remove(EvictionEntry& entry) = 0;
  virtual void on_access(EvictionEntry& entry, const AccessHint& hint) = 0;
  virtual EvictionEntry* victim() = 0;
  virtual bool contains(const EvictionEntry& entry) const = 0;
  virtual std::size_t size() const = 0;
};

// Builds a policy from a spec "NAME" or "NAME:key=value,key=value" (values are numbers; "inf"
// is accepted). Names and parameters, defaults in brackets:
//   lru, lfu, fifo, sieve          no parameters
//   priority:retention=SECONDS     seconds a priority holds after its access on the caller's
//                                  clock (AccessHint::now) before it falls back to 35 [inf]
//   slru:protected=FRACTION        share of linked entries the protected segment may hold [0.8]
//   gdsf:depth_pages=PAGES         depth at which attention doubles a page's prefill cost [1024]
//   reuse:limit=FRACTION,prior=PAGES  how much longer or shorter than LRU a class may keep its
//                                  pages, as a fraction of the recent victims' age [inf] (0:
//                                  LRU); pseudo-reuses that start each class at the average [16]
// Throws std::invalid_argument naming the spec and what is wrong: an unknown name (listing the
// known ones), an unknown parameter, a value that is not a number or is out of range.
std::unique_ptr<EvictionPolicy> make_policy(std::string_view spec);
// The names make_policy() knows, each usable alone with default parameters.
std::vector<std::string_view> policy_names();

}  // namespace radixkv
