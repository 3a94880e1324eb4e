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
//     victim_stays_first(): the policy promises the same answer until the entry is gone, so the
//     owner may take several pages per call.
//   - next_victim_after(e): without side effects, the entry victim() will name once e and the
//     entries victim() named before it are removed, if nothing is added, accessed or removed
//     otherwise in between. e is linked: the entry victim() just named, or one this call named
//     after it (so the owner can look several victims ahead). nullptr when no entry follows or
//     the policy cannot tell cheaply (the default). Only a hint: the tree uses it to prefetch
//     the memory of the victims ahead (radix/tree_internals.h, VictimLookahead), never to decide.
// The set of linked entries is exactly the set of evictable entries; size() counts them.
// Every operation is O(1) or O(log n) in the number of linked entries.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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
  virtual const EvictionEntry* next_victim_after(const EvictionEntry&) const { return nullptr; }
  // True when victim() would name the same entry again after the owner takes a page from it, as
  // long as nothing else is added, accessed or removed in between, and records nothing per call:
  // the policy's order does not depend on `pages`. The owner may then take several pages from one
  // answer (RadixTree::evict_pages asks once per leaf, not once per page). False, the default,
  // asks before every page: Belady's bound re-ranks a leaf as its tail moves up, and the reuse
  // policy counts every page it names.
  virtual bool victim_stays_first() const { return false; }
  virtual bool contains(const EvictionEntry& entry) const = 0;
  virtual std::size_t size() const = 0;
};

// A policy as a caller names it (RuntimeConfig::policy): a spec for make_policy() ("lru",
// "gdsf:depth_pages=512"), or a factory of the caller's own, for a policy the registry does not
// know (an engine's). Converts implicitly from either, so `.policy = "lru"` and
// `.policy = [] { return std::make_unique<MyPolicy>(); }` both work.
template <typename F>
concept PolicyFactoryLike = std::is_invocable_r_v<std::unique_ptr<EvictionPolicy>, F&>;

class PolicyChoice {
 public:
  PolicyChoice(const char* spec) : spec_(spec) {}
  PolicyChoice(std::string spec) : spec_(std::move(spec)) {}
  PolicyChoice(std::string_view spec) : spec_(spec) {}
  template <PolicyFactoryLike Factory>
  PolicyChoice(Factory factory) : factory_(std::move(factory)) {}

  // A new policy: make_policy(spec), or the factory's. Throws std::invalid_argument for a bad
  // spec, or a factory that returns no policy.
  std::unique_ptr<EvictionPolicy> make() const;
  // The spec, or "" for a factory.
  const std::string& spec() const { return spec_; }

 private:
  std::string spec_;
  std::function<std::unique_ptr<EvictionPolicy>()> factory_;
};

// Builds a policy from a spec, "NAME" or "NAME:key=value,key=value", of the registry
// (eviction/policy_registry.h lists the names and parameters). Throws std::invalid_argument
// naming the spec and what is wrong: an unknown name (listing the known ones), an unknown
// parameter, a value that is not a number or is out of range.
std::unique_ptr<EvictionPolicy> make_policy(std::string_view spec);
// The names make_policy() knows, in registry order, each usable alone with default parameters.
std::vector<std::string_view> policy_names();

}  // namespace radixkv
