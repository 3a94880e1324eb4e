// A stand-in for the radix tree in the policy tests: reserves each entry's policy state in front
// of it and tells the policy what the tree tells it (a new entry's past: its creation on the
// clock; one clock tick per access, with the access's priority, answer length and time), with
// nothing else around it, so that a policy's ordering can be worked out by hand.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <deque>
#include <memory>

#include "eviction/eviction_policy.h"

namespace radixkv::testing {

// An entry with room for any built-in policy's state in front of it (the largest is 56 bytes).
struct RoomyEntry {
  static constexpr std::size_t kRoom = 64;
  alignas(8) std::byte room[kRoom];
  EvictionEntry entry;
};
static_assert(offsetof(RoomyEntry, entry) == RoomyEntry::kRoom);

// Entries that stay where they are made (a deque), seen as EvictionEntry.
class RoomyEntries {
 public:
  class Iterator {
   public:
    explicit Iterator(std::deque<RoomyEntry>::iterator at) : at_(at) {}
    EvictionEntry& operator*() const { return at_->entry; }
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return at_ != other.at_; }

   private:
    std::deque<RoomyEntry>::iterator at_;
  };

  EvictionEntry& emplace_back() { return entries_.emplace_back().entry; }
  EvictionEntry& operator[](std::size_t i) { return entries_[i].entry; }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  Iterator begin() { return Iterator(entries_.begin()); }
  Iterator end() { return Iterator(entries_.end()); }

 private:
  std::deque<RoomyEntry> entries_;
};

struct FakeOwner {
  explicit FakeOwner(std::unique_ptr<EvictionPolicy> p) : policy(std::move(p)) {
    REQUIRE(policy->state_bytes() <= RoomyEntry::kRoom);
  }

  // Creates an entry as the tree's insert does: created at the current clock, touched once
  // (its first hit), then linked.
  EvictionEntry& create(int32_t priority = kDefaultPriority, uint32_t pages = 1,
                        uint32_t prefix_pages = 0) {
    EvictionEntry& entry = create_unlinked(priority, pages, prefix_pages);
    policy->add(entry);
    return entry;
  }
  EvictionEntry& create_unlinked(int32_t priority = kDefaultPriority, uint32_t pages = 1,
                                 uint32_t prefix_pages = 0) {
    EvictionEntry& entry = entries.emplace_back();
    entry.pages = pages;
    entry.prefix_pages = prefix_pages;
    AccessHistory past;
    past.created = clock;
    policy->adopt(entry, past);
    touch(entry, priority);
    return entry;
  }
  // One access, as touch_path does it for each node on a path.
  void touch(EvictionEntry& entry, int32_t priority = kDefaultPriority) {
    AccessHint hint{priority, now, output_tokens};
    hint.tick = ++clock;
    policy->on_access(entry, hint);
  }

  RoomyEntries entries;  // declared first: outlives the policy that links them
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
