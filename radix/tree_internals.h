// The private parts of RadixTree that several of its source files share: the host tier's state,
// the event buffer and the eviction lookahead. Not part of the interface; included only by
// radix/*.cpp.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <deque>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "radix/radix_tree.h"

namespace radixkv {

// The bytes a policy keeps per entry, which the tree reserves in front of each entry: a multiple
// of 8, so that the entry and the state stay aligned (eviction/eviction_entry.h). Throws
// std::invalid_argument, its message starting with `who`, for another size.
inline std::size_t checked_state_bytes(const EvictionPolicy& policy, std::string_view who) {
  const std::size_t bytes = policy.state_bytes();
  if (bytes % 8 != 0) {
    throw std::invalid_argument(
        fmt::format("{}: the eviction policy '{}' keeps {} bytes per entry, not a multiple of 8",
                    who, policy.name(), bytes));
  }
  return bytes;
}

struct RadixTree::HostTier {
  HostTier(PagePool& pool, PageCopier& copier, std::unique_ptr<EvictionPolicy> policy,
           uint64_t limit, WritePolicy write)
      : pool(pool),
        copier(copier),
        policy(std::move(policy)),
        state_bytes(this->policy->state_bytes()),
        write(write),
        limit_pages(limit == 0 ? pool.capacity_pages()
                               : std::min<uint64_t>(limit, pool.capacity_pages())),
        in_tree(pool.capacity_pages(), false) {}

  PagePool& pool;
  PageCopier& copier;
  std::unique_ptr<EvictionPolicy> policy;
  std::size_t state_bytes;  // the host policy's, in front of every HostPart (checked_state_bytes)
  WritePolicy write;
  uint64_t limit_pages;  // cached host pages the tree may hold (at most the pool)
  // Per host page, by page - pool.first_page() (a partition's first id need not be 0): through
  // indexed() and hash() only.
  std::vector<bool> in_tree;     // indexed by the tree
  std::vector<PageHash> hashes;  // its hash, when page hashes are on
  std::vector<bool>::reference indexed(PageId page) { return in_tree[page - pool.first_page()]; }
  bool indexed(PageId page) const { return in_tree[page - pool.first_page()]; }
  PageHash& hash(PageId page) { return hashes[page - pool.first_page()]; }
  const PageHash& hash(PageId page) const { return hashes[page - pool.first_page()]; }
  uint64_t cached = 0;  // host pages indexed
  uint64_t pinned = 0;  // host-only pages of locked nodes
  // Host pages held only by a running copy (load sources under write-back), in issue order.
  std::deque<std::pair<CopyTicket, PageId>> in_flight;
  CopyTicket last_ticket = 0;  // the latest copy the tree issued
  CopyTicket last_load = 0;    // the latest load
  // Scratch for one batch of copies, reused across calls.
  std::vector<PageTransfer> transfers;
  std::vector<PageId> sources;  // device pages to release once the batch is done
  std::vector<PageId> fresh;    // host pages set aside for the batch
};

// Batches consecutive removals of one tier and reason into one removed_because() event; everything
// else goes through at once, after the removals before it.
class RadixTree::EventBuffer {
 public:
  void add(TierEvents* observer) { sink_.add(observer); }
  TierEvents& sink() { return sink_; }
  void stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
              std::span<const PageHash> hashes, std::span<const TokenId> tokens) {
    send_removed();
    sink_.stored(tier, ns, parent, hashes, tokens);
  }
  void removed(Tier tier, const PageHash& hash, RemovalReason reason) {
    if (!removed_.empty() && (tier != removed_tier_ || reason != removed_reason_)) send_removed();
    removed_tier_ = tier;
    removed_reason_ = reason;
    removed_.push_back(hash);
  }
  void cleared() {
    send_removed();
    sink_.cleared();
  }
  void flush() {
    send_removed();
    sink_.flush();
  }
  std::vector<PageHash>& scratch() { return scratch_; }

 private:
  void send_removed() {
    if (removed_.empty()) return;
    sink_.removed_because(removed_tier_, removed_, removed_reason_);
    removed_.clear();
  }

  TierObservers sink_;
  Tier removed_tier_ = Tier::kDevice;
  RemovalReason removed_reason_ = RemovalReason::kEvicted;
  std::vector<PageHash> removed_;
  std::vector<PageHash> scratch_;
};

// The victims a plain eviction loop takes next, named ahead of time by the policy
// (EvictionPolicy::next_victims_after), so that the memory each one touches is on its way while
// the ones before it are freed. In a tree far larger than the cache every victim costs a row of
// misses: two lines of its node's block (the policy's state and the node: radix/radix_node.h), its
// page's refcount in the pool and its slot in the parent's child table (a random slot of a large
// table). Taken one victim at a time they add up; fetched ahead they overlap.
//
// In bursts: a prefetch that misses holds up the instructions after it for part of the miss on
// the machines radixkv is measured on (a fetch is not free to retire at once), and freeing one
// victim takes ~500 instructions, about what the core keeps in flight, so fetches issued one per
// victim each cost a share of a miss, one after the other. Issued kBurst at a time, from a tight
// loop, their waits overlap (a kernel of one random line and ~250 instructions per page, no tree:
// 70-76 ns per page with one fetch per page, 44-45 with bursts of 8; bench/README.md). So every
// kBurst victims the look-ahead runs three stages, each on the victims that the one before it
// reached a burst earlier, whose lines have come in since: it names the victims kNameFrom..kDepth
// ahead and fetches their blocks; fetches the parent's child slot and the tail page id of those
// kSlotFrom..kNameFrom ahead (read from their blocks); and the page refcounts of those
// kRefcountFrom..kSlotFrom ahead (the page ids). This only pays when naming the victims ahead
// reads none of them: LRU and FIFO keep their order in an array (eviction/rank_queue_policy.h);
// with a policy that links its entries, naming a victim reads the one named before it. Only a
// hint: a victim the look-ahead did not foresee (a parent that just became a leaf and ranks first)
// starts it again, and nothing is decided from it. Off while fewer than kMinLeaves leaves are
// evictable: their nodes fit in the caches, and looking ahead would only add its own cost
// (BM_Evict with 2 MiB pages: +20% at 10^3 leaves, +9% at 10^4, -31% at 10^5; bench/README.md).
// Every fetch helper here and below (ChildTable::prefetch, PagePool::prefetch) is always inlined:
// g++ 12's pure-const analysis finds a function that only calls __builtin_prefetch "pure", and
// dead-code elimination then deletes the calls to it. Which calls survived depended on inlining
// heuristics (a two-line change to ChildTable::prefetch lost the array and slot fetches, and
// BM_Evict at 10^6 leaves went from 6.2 to 11.5 us per 64 pages); `objdump -d` of evict_pages
// shows the prefetch instructions of all three stages.
class RadixTree::VictimLookahead {
 public:
  static constexpr size_t kMinLeaves = 32768;

  VictimLookahead(const EvictionPolicy& policy, const PagePool& pool, std::size_t state_bytes)
      : policy_(policy),
        pool_(pool),
        state_bytes_(state_bytes),
        active_(policy.size() >= kMinLeaves) {}

  // Called with every victim, before its page is taken.
  void on_victim(const RadixNode* victim) {
    if (!active_ || victim == current_) return;  // off, or the same leaf gives another page
    current_ = victim;
    if (count_ > 0 && ahead(0) == victim) {
      first_ = (first_ + 1) % kDepth;
      --count_;
      slots_done_ -= slots_done_ > 0 ? 1 : 0;
      refcounts_done_ -= refcounts_done_ > 0 ? 1 : 0;
    } else {
      count_ = slots_done_ = refcounts_done_ = 0;
    }
    if (count_ <= kNameFrom) burst(victim);
  }

 private:
  // Distances in victims after the current one (0 is the next), in bands of a burst each.
  static constexpr size_t kBurst = 8;
  static constexpr size_t kRefcountFrom = kBurst;
  static constexpr size_t kSlotFrom = 2 * kBurst;
  static constexpr size_t kNameFrom = 3 * kBurst;
  static constexpr size_t kDepth = 4 * kBurst;

  void burst(const RadixNode* victim) {
    for (; refcounts_done_ < std::min(count_, kSlotFrom); ++refcounts_done_) {
      fetch_refcount(ahead(refcounts_done_));
    }
    for (; slots_done_ < std::min(count_, kNameFrom); ++slots_done_) {
      fetch_arrays_and_slot(ahead(slots_done_));
    }
    std::array<const EvictionEntry*, kDepth> named;
    const size_t n = policy_.next_victims_after(*(count_ > 0 ? ahead(count_ - 1) : victim),
                                                std::span(named).first(kDepth - count_));
    for (size_t i = 0; i < n; ++i) {
      const auto* node = static_cast<const RadixNode*>(named[i]);
      fetch_node(node, state_bytes_);
      ahead_[(first_ + count_++) % kDepth] = node;
    }
  }

  // The lines of a node's block that evicting it reads (radix/radix_node.h): from the policy's
  // state (its links; the free writes into the block's first line) to the end of the node (what
  // freeing it needs), followed by the first page ids. With LRU's state, in a block that starts on
  // a line, these are the block's two lines.
  [[gnu::always_inline]] static void fetch_node(const RadixNode* node, std::size_t state_bytes) {
    __builtin_prefetch(reinterpret_cast<const std::byte*>(node) - state_bytes, 1);
    __builtin_prefetch(reinterpret_cast<const std::byte*>(node + 1) - 1, 1);
  }
  // The tail page id, for a leaf of more pages than the node's last line holds, and the slot.
  [[gnu::always_inline]] static void fetch_arrays_and_slot(const RadixNode* node) {
    __builtin_prefetch(node->page_array() + node->pages - 1, 1);  // read for the tail page
    node->parent_->children_.prefetch(node->first_page_hash_);
  }
  [[gnu::always_inline]] void fetch_refcount(const RadixNode* node) const {
    if (node->pages > 0) pool_.prefetch(node->page_array()[node->pages - 1]);
  }

  const EvictionPolicy& policy_;
  const PagePool& pool_;
  const std::size_t state_bytes_;  // the policy's, in front of every node
  const bool active_;
  // The i-th victim after the current one.
  const RadixNode* ahead(size_t i) const { return ahead_[(first_ + i) % kDepth]; }

  const RadixNode* current_ = nullptr;
  std::array<const RadixNode*, kDepth> ahead_{};  // a ring: ahead(0) is at first_
  size_t first_ = 0;
  size_t count_ = 0;           // victims named
  size_t slots_done_ = 0;      // the first this many have had their slot fetched
  size_t refcounts_done_ = 0;  // ... and their refcount
};

}  // namespace radixkv
