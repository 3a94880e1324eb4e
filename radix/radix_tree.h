// RadixTree: the prefix index. A compressed radix trie over token ids, one per namespace, whose
// edges point at refcounted pages of a PagePool (the device) and, with a host tier, of a second
// PagePool (the host).
//
// Semantics (see docs/design.md, "The radix trie", and docs/tiers.md for the tiers):
//   - Only whole pages are cached. Keys are cut down to a multiple of page_tokens; nodes split only
//     at page boundaries.
//   - match() returns the longest cached page-aligned prefix on any tier, appends the ids of its
//     leading device pages, and returns the node where it ends, splitting an edge when the match
//     ends inside it. By invariant 1 (radix_node.h) the match is a device run, then a host run.
//     It touches the path for the policies. It neither copies the key nor allocates, except for a
//     split or the first use of a namespace.
//   - insert() adds the pages of a computed prefix. For the leading tokens that were already cached
//     on the device the tree's pages stay canonical: the caller's pages there are not taken, and
//     the caller must switch its block table to the tree's pages before it releases its
//     duplicates. Cached pages that were on the host only take the caller's pages as their device
//     pages (the host copy stays under write-through, is freed under write-back). The tree takes
//     one reference (PagePool::retain) on every device page it newly indexes.
//   - lock()/unlock() pin a node and its ancestors against eviction from every tier. A node handle
//     (RadixNode*) stays valid while it is locked; an unlocked handle is valid only until the next
//     call that may evict.
//   - evict_pages(k) takes k device pages one at a time, each from the device tail of the node the
//     device policy names as victim then (usually the same node again). Without a host tier the
//     page leaves the trie; it removes leaves that run empty and offers their parents to the
//     policy. With one (tier_config.h): a page with a host copy just leaves the device; under
//     write-back one without is copied to the host first (the host evicting to make room; the
//     copies of one call go in one batch, waited for before the device pages are released);
//     otherwise the page leaves the trie, and with it any host-only pages below it (counted in
//     TreeStats::dropped_pages). O(1) amortised per page plus the policies' cost; no tree walk
//     except for such a drop.
//   - Host eviction (evict_host_pages, and whenever a copy to the host needs room) takes the
//     host-only tail page of the leaf the host policy names. Host copies of device pages are not
//     host-evicted; a write-through copy the host has no room for is skipped (counted).
//   - load(end, pages) makes the host run of a locked match device pages of the trie at once,
//     using the caller's fresh device pages, and starts the copies; the returned ticket tells when
//     the bytes are there. Under write-back the host pages leave the trie and are freed when their
//     copy is done (in flight until then).
//
// Page accounting: cached_pages() = device pages indexed by the tree; protected_pages() = those in
// nodes with a lock; evictable_pages() = the rest, all of which evict_pages() can release.
// Host: host_cached_pages() = host pages indexed; host_in_flight_pages() = host pages held only
// by a copy still running; the host pool's capacity == free + cached + in flight.
// Limit of the host: a copy to the host needs a free host page and host cached pages below the
// host tier's limit (HostTierSetup::limit_pages), not counting (under write-back) host-only pages
// of locked nodes, which are about to be loaded and leave the host. The host's byte budget and its
// watermarks are the runtime's, as the device's are: the tree knows no budget.
// Errors (bad page counts, foreign or free pages, unlocking an unlocked node, erasing a node that
// is not an evictable leaf, a host tier that does not fit) throw std::invalid_argument or
// std::logic_error before anything changes.
//
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "eviction/eviction_policy.h"
#include "kv_store/page_pool.h"
#include "radix/page_hash.h"
#include "radix/radix_node.h"
#include "radix/tier_config.h"
#include "radix/tier_events.h"

namespace radixkv {

struct MatchResult {
  uint32_t tokens = 0;         // matched tokens on any tier, a multiple of page_tokens
  uint32_t device_tokens = 0;  // the leading ones on the device; the rest are on the host only
  RadixNode* node = nullptr;   // where the match ends: the namespace root when nothing matched
  uint32_t host_tokens() const { return tokens - device_tokens; }
};

// A cached page that begins with the tokens after a match (RadixTree::partial_page).
struct PartialPage {
  uint32_t tokens = 0;         // leading tokens it shares with them, in [1, page_tokens); 0: none
  PageId page = kInvalidPage;  // its device page
};

struct InsertResult {
  uint32_t cached_tokens = 0;  // leading tokens that were already cached (on any tier)
  uint32_t new_pages = 0;      // device pages the tree took a reference on
  RadixNode* node = nullptr;   // the node where the inserted key ends
};

// Whether an insert is an access of its path (RadixTree::insert_below).
enum class PathAccess : uint8_t { kRecorded, kNotRecorded };

struct TreeStats {
  uint64_t nodes = 0;  // excluding namespace roots
  uint64_t namespaces = 0;
  uint64_t splits = 0;
  uint64_t evicted_pages = 0;  // device pages evicted (to the host or out of the trie)
  uint64_t evicted_nodes = 0;  // nodes removed by eviction from either tier
  // Heap allocations for nodes and their edge arrays, splits included (child tables, which grow
  // only on insert, are not counted). bench/ reads it to show that the match path never allocates.
  uint64_t heap_allocations = 0;
  // Host tier.
  uint64_t written_pages = 0;       // device -> host copies (write-back and write-through)
  uint64_t loaded_pages = 0;        // host -> device copies
  uint64_t host_evicted_pages = 0;  // host pages the host policy evicted
  uint64_t dropped_pages = 0;       // pages that left the trie from the device (with a host tier)
  uint64_t skipped_writes = 0;      // write-through copies the host had no room for
};

class RadixTree final {
 public:
  RadixTree(PagePool& pool, std::unique_ptr<EvictionPolicy> policy);
  // Waits for running copies, then releases the tree's reference on every page it indexes on
  // either tier. Locks must be gone by then.
  ~RadixTree();
  RadixTree(const RadixTree&) = delete;
  RadixTree& operator=(const RadixTree&) = delete;

  uint32_t page_tokens() const noexcept { return page_tokens_; }

  // `pages`, when given, gets the matched device page ids appended (reserve it to avoid
  // allocating).
  MatchResult match(Namespace ns, std::span<const TokenId> tokens,
                    std::vector<PageId>* pages = nullptr, const AccessHint& hint = {});
  // Length of the longest cached prefix on any tier, with no side effect at all (no touch, no
  // split); `pages`, when given, gets its leading device page ids appended.
  uint32_t peek(Namespace ns, std::span<const TokenId> tokens,
                std::vector<PageId>* pages = nullptr) const;
  // Partial-page reuse: of the children of `end` (a match's end), the one whose first page shares
  // the most leading tokens with `next` (the tokens after the match), when that page is on the
  // device and no load is still writing it; ties go to the first found. No side effect (no access
  // recorded, no split). A full page of `next` equal to a child's never counts: match() takes
  // those.
  PartialPage partial_page(const RadixNode* end, std::span<const TokenId> next);
  // pages.size() must equal tokens.size() / page_tokens (after the cut to whole pages).
  InsertResult insert(Namespace ns, std::span<const TokenId> tokens, std::span<const PageId> pages,
                      const AccessHint& hint = {});
  // insert() for a key that continues below `from`: `tokens` and `pages` are what follows from's
  // end, and cached_tokens counts from there. `from` must be locked by the caller (a sequence's
  // committed prefix), so it cannot go away; splits keep its end where it was. This spares a
  // sequence that commits chunk after chunk re-reading its whole prefix from the root each time.
  // `access`: kRecorded makes the insert an access of the key's whole path (from the root), as a
  // request's insert is; kNotRecorded records none, for pages the caller caches ahead of the
  // access that will use them (the runtime's remote load at admit, whose request records its
  // access when it finishes, as a request that computed those pages would: touch()).
  InsertResult insert_below(RadixNode* from, std::span<const TokenId> tokens,
                            std::span<const PageId> pages, const AccessHint& hint = {},
                            PathAccess access = PathAccess::kRecorded);
  // Records an access of the path from the root to `end` (a node of this tree), as a match that
  // ends there does, without matching anything.
  void touch(RadixNode* end, const AccessHint& hint);

  void lock(RadixNode* node);
  void unlock(RadixNode* node);
  // Removes an unlocked leaf and releases its pages on every tier.
  void erase_leaf(RadixNode* node);
  // Drops every cached page of every tier (TierEvents::cleared()). Throws std::logic_error while
  // any node is locked.
  void clear();

  // The device tier: cached pages, those no lock protects, and eviction of up to n of them in
  // policy order (above); `evicted`, when given, gets the device page each step takes, in order: a
  // page that leaves the trie or moves to the host tier (python/src/slot_trie.h hands the slots of
  // those pages back to the engine).
  uint64_t cached_pages() const noexcept { return cached_pages_; }
  uint64_t evictable_pages() const noexcept { return cached_pages_ - protected_pages_; }
  uint64_t evict_pages(uint64_t n, std::vector<PageId>* evicted = nullptr);

  uint64_t protected_pages() const noexcept { return protected_pages_; }
  // Device pages and host pages (indexed, as host_cached_pages() counts them) per namespace,
  // pinned ones included, kept from count_namespace_pages() on (only on an empty tree; throws
  // std::invalid_argument otherwise): the quota layers' ledgers (eviction/quota_policy.h), one per
  // tier. Each change walks the changed node's path to its root.
  void count_namespace_pages();
  uint64_t namespace_pages(Namespace ns) const;
  uint64_t namespace_host_pages(Namespace ns) const;
  // The root of namespace `ns` (its children are the namespace's first edges), or nullptr when the
  // namespace has never been used since the tree was built or cleared.
  const RadixNode* namespace_root(Namespace ns) const { return find_root(ns); }
  std::size_t evictable_leaves() const { return policy_->size(); }
  bool indexes_page(PageId page) const noexcept { return pool_.contains(page) && marked(page); }
  const TreeStats& stats() const noexcept { return stats_; }
  // Bytes of tree metadata (nodes, token and page arrays, child tables, host parts, the per-page
  // bitmaps and page hashes), as allocated, measured through the allocator's usable sizes
  // (kv_store/heap.h).
  uint64_t metadata_bytes() const;
  EvictionPolicy& policy() noexcept { return *policy_; }
  const EvictionPolicy& policy() const noexcept { return *policy_; }
  PagePool& pool() noexcept { return pool_; }

  // --- The host tier (radix/tier_config.h) ---
  // Adds a host tier to an empty tree. Throws std::invalid_argument (changing nothing) when the
  // tree caches anything, a host tier exists, the pool or copier or policy is missing, or the host
  // pool's layout differs from the device pool's.
  void add_host_tier(HostTierSetup setup);
  bool has_host_tier() const noexcept { return host_tier_ != nullptr; }
  const PagePool* host_pool() const;
  const EvictionPolicy* host_policy() const;
  const WritePolicy* write_policy() const;
  // The host pages that count against the host's budget: cached ones, less (under write-back)
  // the pinned host-only pages a load is about to take.
  uint64_t host_budget_pages() const;
  uint64_t host_cached_pages() const;
  uint64_t host_in_flight_pages() const;
  std::vector<PageId> host_in_flight_page_ids() const;
  // Host pages of locked nodes that are on the host only (a load about to take them).
  uint64_t host_pinned_pages() const;
  bool host_indexes_page(PageId page) const;
  // Makes the host run of the locked match ending at `end` device pages of the trie: the run's
  // pages, in path order, get `device_pages` (fresh pages the caller holds, one per host-only page
  // on the path; the tree takes a reference on each) and the copies host -> device start.
  // Returns their ticket (0 when there was nothing to load). Throws std::invalid_argument, changing
  // nothing, when `end` is not locked or the pages do not fit.
  CopyTicket load(RadixNode* end, std::span<const PageId> device_pages);
  // The latest load still running into the device pages of the path ending at `end`, or 0.
  CopyTicket pending_load(const RadixNode* end);
  bool copy_done(CopyTicket ticket);
  void wait_copy(CopyTicket ticket);
  // Frees the in-flight host pages whose copies are done; returns how many.
  uint64_t retire_copies();
  // Evicts up to n host-only pages in host policy order; returns how many left.
  uint64_t evict_host_pages(uint64_t n);

  // --- Page hashes (radix/page_hash.h) and tier events (radix/tier_events.h) ---
  // Keeps one PageHash per cached page from now on. Only on an empty tree.
  void enable_page_hashes();
  bool page_hashes() const noexcept { return !device_hashes_.empty(); }
  // Tells `events` of every change of tiers from now on, after the observers added before it
  // (radix/tier_events.h, TierObservers); enables page hashes. Only on an empty tree; throws
  // std::invalid_argument otherwise, or for nullptr. `events` must outlive the tree.
  void add_tier_events(TierEvents* events);
  // Sends what is batched, then TierEvents::flush(); the runtime calls it once per call.
  void flush_events();
  // The hash of edge page i of `node` (page hashes must be on).
  PageHash page_hash(const RadixNode* node, uint32_t i) const;
  // Every cached page's hash on `tier`, in no particular order: a whole-tree walk for tests.
  std::vector<PageHash> tier_page_hashes(Tier tier) const;

  // Walks every namespace and checks every invariant of this header and radix_node.h; throws
  // std::logic_error describing the first violation.
  void verify() const;
  // A readable dump: one line per node, indented by depth, with up to `max_tokens` tokens per edge
  // and each page as `d` (device), `hH` (host only) or `d+hH` (both).
  std::string dump(std::size_t max_tokens = 8) const;

 private:
  struct Cursor;
  struct HostTier;
  class EventBuffer;
  class VictimLookahead;
  struct DropResult {
    uint64_t pages = 0;
    uint64_t nodes = 0;
  };

  RadixNode* root_for(Namespace ns);
  const RadixNode* find_root(Namespace ns) const;
  Cursor locate(const RadixNode* root, std::span<const TokenId> tokens,
                std::vector<PageId>* pages) const;
  template <bool kTiered>
  Cursor locate_in(const RadixNode* root, std::span<const TokenId> tokens,
                   std::vector<PageId>* pages) const;
  RadixNode* find_child(const RadixNode* node, const TokenId* page) const;
  uint64_t hash_page(const TokenId* page) const;

  // A node below `parent` (a namespace root, with no edge, when parent is nullptr), whose past
  // the device policy (and the tree, where it keeps pasts) adopts.
  RadixNode* new_node(RadixNode* parent, const TokenId* tokens, const PageId* pages,
                      uint32_t num_pages, const AccessHistory& past);
  // The past of a node made now.
  AccessHistory fresh_past() const {
    AccessHistory past;
    past.created = clock_;
    return past;
  }
  void destroy_node(RadixNode* node);
  // A node's block (radix_node.h): [its past, where kept][device policy state][node][arrays].
  // Roots always have room for a past (a host tier may come after them; they never use it);
  // other nodes have it in a tree with a host tier, which only an empty tree can get.
  std::size_t bytes_before(bool root) const {
    return device_state_bytes_ + (root || host_tier_ ? sizeof(AccessHistory) : 0);
  }
  std::size_t bytes_before(const RadixNode* node) const {
    return bytes_before(node->parent_ == nullptr);
  }
  // The node's past, kept by the tree only where it has a host tier.
  AccessHistory& past(RadixNode* node) {
    return *std::launder(
        reinterpret_cast<AccessHistory*>(reinterpret_cast<std::byte*>(node) - bytes_before(node)));
  }
  RadixNode* split(RadixNode* node, uint32_t upper_pages);
  [[gnu::always_inline]] inline void touch_path(RadixNode* node, const AccessHint& hint);
  template <bool kTiered>
  [[gnu::always_inline]] inline void touch_path_in(RadixNode* node, const AccessHint& hint);
  bool device_evictable(const RadixNode* node) const {
    return !node->is_root() && node->lock_count_ == 0 && node->pages > 0 &&
           node->device_children_ == 0;
  }
  void remove_leaf(RadixNode* node);
  // `node`'s namespace gained (or lost, negative) `delta` device pages.
  void count_pages(const RadixNode* node, int64_t delta) {
    if (count_namespaces_) namespace_pages_[node->name_space()] += static_cast<uint64_t>(delta);
  }
  // Likewise for its indexed host pages (every change of HostTier::cached).
  void count_host_pages(const RadixNode* node, int64_t delta) {
    if (count_namespaces_) {
      namespace_host_pages_[node->name_space()] += static_cast<uint64_t>(delta);
    }
  }
  void remove_tiered_leaf(RadixNode* node);
  void check_node(const RadixNode* node, const char* operation) const;
  void check_empty(const char* operation) const;
  void release_node_pages(RadixNode* node);
  void release_everything();
  // Checks that the tree may take `pages` (in the pool, held by the caller, not indexed, none
  // twice) and marks them indexed; throws std::invalid_argument naming the first that is not,
  // with its index counted from first_index, and marks nothing.
  void claim_pages(std::span<const PageId> pages, size_t first_index, const char* operation);

  // radix_tiers.cpp: the host tier.
  uint64_t evict_tiered(uint64_t n, std::vector<PageId>* evicted);
  // `device`: the node's device pages before the cut.
  void split_tiers(RadixNode* lower, RadixNode* upper, uint32_t upper_pages, uint32_t device);
  void finish_write_back();
  bool host_evictable(const RadixNode* node) const {
    return !node->is_root() && node->lock_count_ == 0 && node->children_.empty() &&
           node->host_only_ > 0;
  }
  HostPart& host_part(RadixNode* node);
  void sync_device_policy(RadixNode* node);
  void sync_host_policy(RadixNode* node);
  void refresh_host_charge(RadixNode* node);
  void device_count_changed(RadixNode* node, uint32_t before);
  uint64_t host_room() const;
  uint64_t make_host_room(uint64_t n);
  void wait_node_copies(RadixNode* node);
  void back_up(RadixNode* node);
  void back_up_hot_path(RadixNode* node);
  uint32_t promote_host_run(RadixNode* end, std::span<const PageId> device_pages,
                            CopyTicket ticket);
  // Pages [first, edge) of node and everything below leave the trie; `reason` for the events.
  DropResult drop_from(RadixNode* node, uint32_t first, RemovalReason reason);
  void release_host_page(RadixNode* node, uint32_t i);
  void evict_one_host_page(RadixNode* leaf);

  // radix_events.cpp: page hashes and events.
  PageHash parent_hash(const RadixNode* node, uint32_t i) const;
  void hash_new_pages(const RadixNode* node, uint32_t first);
  void emit_stored(Tier tier, const RadixNode* node, uint32_t first, uint32_t count);
  void emit_removed(Tier tier, const RadixNode* node, uint32_t i, RemovalReason reason);
  // Tells the sink that page i of node leaves the trie from `tier`; `parent` is the hash of the
  // page before it, passed in because that page (or its node) may be gone already when a subtree
  // is dropped. Returns page i's hash: the next page's parent.
  PageHash emit_dropping(Tier tier, const RadixNode* node, uint32_t i, const PageHash& parent);
  // Tells the sink that the device pages [first, first + count) of node were just inserted.
  void emit_inserted(const RadixNode* node, uint32_t first, uint32_t count);
  // The page's bit in in_tree_; `page` must be in the pool.
  std::vector<bool>::reference marked(PageId page) { return in_tree_[page - first_page_]; }
  bool marked(PageId page) const { return in_tree_[page - first_page_]; }
  // The page's hash in device_hashes_ (page hashes on, `page` in the pool).
  PageHash& device_hash(PageId page) { return device_hashes_[page - first_page_]; }
  const PageHash& device_hash(PageId page) const { return device_hashes_[page - first_page_]; }

  PagePool& pool_;
  std::unique_ptr<EvictionPolicy> policy_;
  std::size_t device_state_bytes_;  // policy_->state_bytes()
  uint32_t page_tokens_;
  PageId first_page_;  // the pool's first page id (a partition's need not be 0)
  std::unordered_map<Namespace, RadixNode*> roots_;
  std::vector<bool> in_tree_;  // per pool page (by page - first_page_): indexed by this tree
  uint64_t clock_ = 0;
  uint64_t cached_pages_ = 0;
  uint64_t protected_pages_ = 0;
  uint64_t node_heap_bytes_ = 0;  // nodes and their arrays, by mi_usable_size
  TreeStats stats_;
  std::unique_ptr<HostTier> host_tier_;
  std::vector<PageHash> device_hashes_;  // per pool page (as in_tree_), when page hashes are on
  std::unique_ptr<EventBuffer> events_;
  std::unordered_map<Namespace, uint64_t> namespace_pages_;       // when count_namespaces_
  std::unordered_map<Namespace, uint64_t> namespace_host_pages_;  // likewise
  bool count_namespaces_ = false;
  bool extras_ = false;  // a host tier, page hashes or events: what a plain cache skips
};

}  // namespace radixkv
