// DiskIndex: which page each slot of the disk tier holds, which pages may be evicted, and the
// prefix rule (docs/tiers.md, "The disk tier"). Memory only; the tier does the I/O.
//
// A slot is free, writing (its page is indexed and may be served from the write's buffer; it
// is not evictable until the write is done), stored, or releasing (unindexed while its write is
// still running; free once it is done, never reused before).
//
// The prefix rule. A page on disk is only worth keeping while a lookup can reach it: lookups come
// after the local match, so a page is reachable while its parent is in the trie, or on disk and
// reachable itself, or a namespace root (a first page). The index keeps every page it holds
// reachable, given what the tier tells it about the trie:
//   - eviction takes only disk leaves (stored pages with no child on disk), so it never strands
//     a child;
//   - reclaim_below(h), when page h has left the trie and is not on disk: every page below it on
//     disk goes (its children, theirs, ...), counted as unreachable;
//   - reclaim_unanchored(), when the trie went away as a whole (cleared, a new runtime, a restart):
//     every page whose chain does not reach a first page through pages on disk goes.
// Children are found through a map from a parent's hash to its children's slots (an intrusive
// list), which also says whether a page is a disk leaf.
//
// Eviction uses any registered policy (eviction/) over the slots, one page per entry; the
// entries linked are exactly the stored disk leaves other than a protected slot (take()).
// verify() checks all of this. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "disk/slot_format.h"
#include "eviction/eviction_policy.h"
#include "radix/page_hash.h"

namespace radixkv::disk {

using SlotId = uint32_t;
inline constexpr SlotId kNoSlot = UINT32_MAX;

class DiskIndex {
 public:
  enum class State : uint8_t { kFree, kWriting, kStored, kReleasing };

  struct Slot : EvictionEntry {
    PageHash hash;
    PageHash parent;
    uint64_t generation = 0;
    SlotId prev_sibling = kNoSlot;  // among the children on disk of `parent`
    SlotId next_sibling = kNoSlot;
    State state = State::kFree;
    bool first = false;
  };

  // Why pages left the index, for the tier's counters.
  struct Removed {
    uint64_t evicted = 0;      // by the policy, to make room
    uint64_t unreachable = 0;  // by the prefix rule
  };

  // Throws std::invalid_argument for 0 slots or no policy.
  DiskIndex(uint32_t slots, std::unique_ptr<EvictionPolicy> policy);
  DiskIndex(const DiskIndex&) = delete;
  DiskIndex& operator=(const DiskIndex&) = delete;

  uint32_t slots() const { return static_cast<uint32_t>(cells_.size()); }
  uint64_t pages() const { return map_.size(); }  // indexed: writing or stored
  uint32_t free_slots() const { return static_cast<uint32_t>(free_.size()); }
  const Slot& slot(SlotId id) const { return cells_[id].slot; }
  // The slot holding `hash` (writing or stored), or kNoSlot.
  SlotId find(const PageHash& hash) const;
  const Removed& removed() const { return removed_; }

  // A free slot for a new page, evicting the policy's victims until one is free; kNoSlot when none
  // is free and nothing is evictable. `keep` (or kNoSlot) is never evicted: the parent of the page
  // the slot is for.
  SlotId take(SlotId keep);
  // Indexes `header`'s page in slot `id` (from take(), or free at recovery), writing or stored.
  // Its hash must not be indexed yet.
  void add(SlotId id, const SlotHeader& header, bool stored);
  // The write into `id` is over. Returns true when the slot was releasing (now free); otherwise
  // the page is stored (and may be evicted).
  bool write_done(SlotId id);
  // Unindexes the page in `id` (a bad copy, a failed write); free at once, or once its write is
  // done. Pages below it on disk stay: call reclaim_below() when it has no other copy.
  void remove(SlotId id);
  // An access to a stored or writing page, as the policy counts accesses.
  void touch(SlotId id);

  // The pages on disk below `hash` (children, theirs, ...), which can no longer be reached: `hash`
  // has left the trie and is not on disk. Returns how many went.
  uint64_t reclaim_below(const PageHash& hash);
  // Every page whose chain does not reach a first page through pages on disk; returns how many.
  uint64_t reclaim_unanchored();

  // Recovery, on an index with nothing indexed: indexes the pages found in slots (headers that
  // checked out) as stored, the newest generation of each hash (older copies' slots are free),
  // in generation order (the policy sees the oldest written first), then reclaims the unanchored
  // ones. Returns the pages indexed.
  struct Found {
    SlotId id;
    SlotHeader header;
  };
  uint64_t restore(std::vector<Found> found);

  // Throws std::logic_error for a broken invariant: map and slots disagree, a free slot listed
  // twice or indexed, the children lists, the policy's set not exactly the evictable slots, or a
  // page not reachable (first, its parent on disk, or in_trie(parent)).
  void verify(const std::function<bool(const PageHash&)>& in_trie) const;

 private:
  bool evictable(SlotId id) const;
  void sync_policy(SlotId id);
  void link_child(SlotId id);
  void unlink_child(SlotId id);
  void unindex(SlotId id);
  void free_slot(SlotId id);
  SlotId first_child(const PageHash& hash) const;

  // A slot with room right in front of it for the policy's state of it, as the eviction policies
  // require (eviction/eviction_entry.h: [state][entry]); every built-in policy's fits (the
  // largest, reuse, keeps 56 bytes), and the constructor refuses a policy that needs more.
  struct SlotCell {
    static constexpr std::size_t kStateRoom = 64;
    alignas(8) std::byte state[kStateRoom];
    Slot slot;
  };
  Slot& at(SlotId id) { return cells_[id].slot; }
  const Slot& at(SlotId id) const { return cells_[id].slot; }
  SlotId id_of(const EvictionEntry& entry) const;

  std::vector<SlotCell> cells_;  // never resized: the policy links their entries
  std::unique_ptr<EvictionPolicy> policy_;
  std::unordered_map<PageHash, SlotId, PageHashKey> map_;
  std::unordered_map<PageHash, SlotId, PageHashKey> children_;  // parent hash -> first child
  std::vector<SlotId> free_;
  SlotId keep_ = kNoSlot;
  uint64_t clock_ = 0;
  Removed removed_;
};

}  // namespace radixkv::disk
