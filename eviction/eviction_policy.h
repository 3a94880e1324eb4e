// EvictionPolicy: the seam every policy plugs into. The tree calls it; it never calls the tree.
//
// Contract with the owner of the entries:
//   - state_bytes(): the bytes of the policy's state of an entry (eviction/eviction_entry.h), which
//     the owner reserves right before every entry it hands to the policy (8-aligned). 0 for a
//     policy that keeps nothing per entry (the default).
//   - adopt(e, past): before any other call on e, and again to start e over once it is unlinked:
//     sets up the policy's state of e as if the policy had seen `past` (AccessHistory): a new
//     entry's (created now, never accessed), the upper part of a split (the node's past, as
//     history() tells it), a node's host part (the node's past, kept by the owner while a second
//     policy needs it). What the policy decides for itself (a segment, a visited bit, a score)
//     starts afresh; only the facts of the past carry over. e is not linked.
//   - history(e): e's past as far as the policy keeps it; the fields it does not keep read as
//     their defaults. adopt(f, history(e)) makes f continue e's past.
//   - add(e): e just became evictable (an unpinned leaf that is not a root). e is not linked.
//   - remove(e): e stops being evictable (pinned, gained a child, erased). e is linked.
//   - on_access(e, hint): e lies on a matched or inserted path, linked or not; hint.tick is the
//     owner's clock for this access (one tick per operation, every entry on the path alike) and
//     counts as one more hit. The policy keeps of it what it needs.
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
//   - next_victims_after(e, out): the same walk k = out.size() steps at once: fills out with the
//     victims next_victim_after() names from e on, one after the other, up to the first nullptr;
//     returns how many. By default it asks next_victim_after() for each; a policy whose walk is a
//     loop over its own order (RankQueuePolicy's ring) runs it in one call.
//   - retain(e, r), hold(session, until), release(session): retention (eviction/retention.h),
//     which only the retention layer (eviction/retention_layer.h) honours; every other policy
//     ignores them (the defaults). retain() may name a linked entry or not.
// The owner frees an unlinked entry's memory, state and all, without telling the policy.
// A policy that wraps another forwards every call, these included.
// The set of linked entries is exactly the set of evictable entries; size() counts them.
// Every operation is O(1) or O(log n) in the number of linked entries.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "eviction/eviction_entry.h"
#include "eviction/retention.h"

namespace radixkv {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual std::string_view name() const = 0;
  virtual std::size_t state_bytes() const { return 0; }
  virtual void adopt(EvictionEntry&, const AccessHistory&) {}
  virtual AccessHistory history(const EvictionEntry&) const { return {}; }
  virtual void add(EvictionEntry& entry) = 0;
  virtual void remove(EvictionEntry& entry) = 0;
  virtual void on_access(EvictionEntry& entry, const AccessHint& hint) = 0;
  virtual EvictionEntry* victim() = 0;
  virtual const EvictionEntry* next_victim_after(const EvictionEntry&) const { return nullptr; }
  virtual std::size_t next_victims_after(const EvictionEntry& entry,
                                         std::span<const EvictionEntry*> out) const {
    std::size_t n = 0;
    for (const EvictionEntry* e = &entry; n < out.size(); out[n++] = e) {
      e = next_victim_after(*e);
      if (e == nullptr) break;
    }
    return n;
  }
  // True when victim() would name the same entry again after the owner takes a page from it, as
  // long as nothing else is added, accessed or removed in between, and records nothing per call:
  // the policy's order does not depend on `pages`. The owner may then take several pages from one
  // answer (RadixTree::evict_pages asks once per leaf, not once per page). False, the default,
  // asks before every page: Belady's bound re-ranks a leaf as its tail moves up, and the reuse
  // policy counts every page it names.
  virtual bool victim_stays_first() const { return false; }
  virtual bool contains(const EvictionEntry& entry) const = 0;
  virtual std::size_t size() const = 0;
  // Retention (above): keep `entry` as `retention` asks; keep the entry `session` last named in a
  // retain() until `until` on the caller's clock; stop keeping it.
  virtual void retain(EvictionEntry& /*entry*/, const Retention& /*retention*/) {}
  virtual void hold(uint64_t /*session*/, double /*until*/) {}
  virtual void release(uint64_t /*session*/) {}
  // The caller's clock moved to `now` (PrefixCacheRuntime::set_now, before a request allocates):
  // a policy that reads deadlines on that clock reads them against it from here on, also before
  // any access tells it the time. Layers forward it, as they forward retain/hold/release.
  virtual void set_now(double /*now*/) {}
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
