// A stand-in for the radix tree in the policy tests: keeps EvictionEntry facts the way the tree
// does (one clock tick per access, hits counted, priority, answer length and time of the latest
// access, creation time), with nothing else around it, so that a policy's ordering can be worked
// out by hand.
#pragma once

#include <doctest/doctest.h>

#include <deque>
#include <memory>

#include "eviction/eviction_policy.h"

namespace radixkv::testing {

struct FakeOwner {
  explicit FakeOwner(std::unique_ptr<EvictionPolicy> p) : policy(std::move(p)) {}

  // Creates an entry as the tree's insert does: stamped with the current clock, touched once
  // (hits = 1), then linked.
  EvictionEntry& create(int32_t priority = kDefaultPriority, uint32_t pages = 1,
                        uint32_t prefix_pages = 0) {
    EvictionEntry& entry = create_unlinked(priority, pages, prefix_pages);
    policy->add(entry);
    return entry;
  }
  EvictionEntry& create_unlinked(int32_t priority = kDefaultPriority, uint32_t pages = 1,
                                 uint32_t prefix_pages = 0) {
    EvictionEntry& entry = entries.emplace_back();
    entry.inserted_at = clock;
    entry.pages = pages;
    entry.prefix_pages = prefix_pages;
    touch(entry, priority);
    return entry;
  }
  // One access, as touch_path does it for each node on a path.
  void touch(EvictionEntry& entry, int32_t priority = kDefaultPriority) {
    const AccessHint hint{priority, now, output_tokens};
    entry.last_access = ++clock;
    ++entry.hits;
    entry.priority = priority;
    entry.output_tokens = hint.output_tokens;
    entry.last_access_s = hint.now;
    policy->on_access(entry, hint);
  }

  std::deque<EvictionEntry> entries;  // declared first: outlives the policy that links them
  std::unique_ptr<EvictionPolicy> policy;
  uint64_t clock = 0;
  double now = 0.0;            // seconds, passed as AccessHint::now
  uint32_t output_tokens = 0;  // passed as AccessHint::output_tokens
};

// Removes the victim, which must be `expected`, as the tree does once it took all its pages.
inline void evict(FakeOwner& owner, EvictionEntry& expected) {
  REQUIRE(owner.policy->victim() == &expected);
  owner.policy->remove(expected);
}

}  // namespace radixkv::testing
