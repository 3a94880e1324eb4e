// RadixTree: the prefix index. A compressed radix trie over token ids, one per namespace, whose
// edges point at refcounted pages of a PagePool.
//
// Semantics (see docs/design.md, "The radix trie"):
//   - Only whole pages are cached. Keys are cut down to a multiple of page_tokens; nodes split only
//     at page boundaries.
//   - match() returns the longest cached page-aligned prefix, appends its page ids, and returns the
//     node where it ends, splitting an edge when the match ends inside it. It touches the path for
//     the policy. It neither copies the key nor allocates, except for a split or the first use of
//     a namespace.
//   - insert() adds the pages of a computed prefix. For the leading tokens that were already cached
//     the tree's pages stay canonical: the caller's pages there are not taken, and the caller must
//     switch its block table to the tree's pages before it releases its duplicates. The tree takes
//     one reference (PagePool::retain) on every page it newly indexes.
//   - lock()/unlock() pin a node and its ancestors. A node handle (RadixNode*) stays valid while it
//     is locked; an unlocked handle is valid only until the next call that may evict.
//   - evict_pages(k) takes k pages one at a time, each from the tail of the leaf the policy names
//     as victim then (usually the same leaf again), leaving the rest of that leaf cached; it
//     removes leaves that run empty and offers their parents to the policy. O(1) amortised per
//     page plus the policy's cost; no tree walk.
//
// Page accounting: cached_pages() = pages indexed by the tree; protected_pages() = those in nodes
// with a lock; evictable_pages() = the rest, all of which evict_pages() can release.
// Errors (bad page counts, foreign or free pages, unlocking an unlocked node, erasing a node that
// is not an evictable leaf) throw std::invalid_argument or std::logic_error before anything
// changes.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "eviction/cache_budget.h"
#include "eviction/eviction_policy.h"
#include "kv_store/page_pool.h"
#include "radix/radix_node.h"

namespace radixkv {

struct MatchResult {
  uint32_t tokens = 0;        // matched tokens, a multiple of page_tokens
  RadixNode* node = nullptr;  // where the match ends: the namespace root when nothing matched
};

struct InsertResult {
  uint32_t cached_tokens = 0;  // leading tokens that were already cached
  uint32_t new_pages = 0;      // pages the tree took a reference on
  RadixNode* node = nullptr;   // the node where the inserted key ends
};

struct TreeStats {
  uint64_t nodes = 0;  // excluding namespace roots
  uint64_t namespaces = 0;
  uint64_t splits = 0;
  uint64_t evicted_pages = 0;
  uint64_t evicted_nodes = 0;
  // Heap allocations for nodes and their edge arrays, splits included (child tables, which grow
  // only on insert, are not counted). bench/ reads it to show that the match path never allocates.
  uint64_t heap_allocations = 0;
};

class RadixTree final : public Evictor {
 public:
  RadixTree(PagePool& pool, std::unique_ptr<EvictionPolicy> policy);
  // Releases the tree's reference on every page it indexes. Locks must be gone by then.
  ~RadixTree() override;
  RadixTree(const RadixTree&) = delete;
  RadixTree& operator=(const RadixTree&) = delete;

  uint32_t page_tokens() const { return page_tokens_; }

  // `pages`, when given, gets the matched page ids appended (reserve it to avoid allocating).
  MatchResult match(Namespace ns, std::span<const TokenId> tokens,
                    std::vector<PageId>* pages = nullptr, const AccessHint& hint = {});
  // Length of the longest cached prefix, with no side effect at all (no touch, no split); `pages`,
  // when given, gets its page ids appended.
  uint32_t peek(Namespace ns, std::span<const TokenId> tokens,
                std::vector<PageId>* pages = nullptr) const;
  // pages.size() must equal tokens.size() / page_tokens (after the cut to whole pages).
  InsertResult insert(Namespace ns, std::span<const TokenId> tokens, std::span<const PageId> pages,
                      const AccessHint& hint = {});
  // insert() for a key that continues below `from`: `tokens` and `pages` are what follows from's
  // end, and cached_tokens counts from there. `from` must be locked by the caller (a sequence's
  // committed prefix), so it cannot go away; splits keep its end where it was. This spares a
  // sequence that commits chunk after chunk re-reading its whole prefix from the root each time.
  InsertResult insert_below(RadixNode* from, std::span<const TokenId> tokens,
                            std::span<const PageId> pages, const AccessHint& hint = {});

  void lock(RadixNode* node);
  void unlock(RadixNode* node);
  // Removes an evictable leaf and releases its pages.
  void erase_leaf(RadixNode* node);

  // Evictor
  uint64_t cached_pages() const override { return cached_pages_; }
  uint64_t evictable_pages() const override { return cached_pages_ - protected_pages_; }
  uint64_t evict_pages(uint64_t n) override;

  uint64_t protected_pages() const { return protected_pages_; }
  std::size_t evictable_leaves() const { return policy_->size(); }
  bool indexes_page(PageId page) const { return pool_.contains(page) && marked(page); }
  const TreeStats& stats() const { return stats_; }
  // Bytes of tree metadata (nodes, token and page arrays, child tables, the per-page bitmap), as
  // allocated, measured through the allocator's usable sizes (kv_store/heap.h).
  uint64_t metadata_bytes() const;
  EvictionPolicy& policy() { return *policy_; }
  const EvictionPolicy& policy() const { return *policy_; }
  PagePool& pool() { return pool_; }

  // Walks every namespace and checks every invariant of this header and radix_node.h; throws
  // std::logic_error describing the first violation.
  void verify() const;
  // A readable dump: one line per node, indented by depth, with up to `max_tokens` tokens per edge.
  std::string dump(std::size_t max_tokens = 8) const;

 private:
  struct Cursor;

  RadixNode* root_for(Namespace ns);
  const RadixNode* find_root(Namespace ns) const;
  Cursor locate(const RadixNode* root, std::span<const TokenId> tokens,
                std::vector<PageId>* pages) const;
  RadixNode* find_child(const RadixNode* node, const TokenId* page) const;
  uint64_t hash_page(const TokenId* page) const;

  RadixNode* new_node(RadixNode* parent, Namespace ns, const TokenId* tokens, const PageId* pages,
                      uint32_t num_pages);
  void destroy_node(RadixNode* node);
  RadixNode* split(RadixNode* node, uint32_t upper_pages);
  void touch_path(RadixNode* node, const AccessHint& hint);
  bool evictable(const RadixNode* node) const {
    return !node->is_root() && node->is_leaf() && node->lock_count_ == 0;
  }
  void remove_leaf(RadixNode* node);
  void check_node(const RadixNode* node, const char* operation) const;
  // The page's bit in in_tree_; `page` must be in the pool.
  std::vector<bool>::reference marked(PageId page) { return in_tree_[page - first_page_]; }
  bool marked(PageId page) const { return in_tree_[page - first_page_]; }

  PagePool& pool_;
  std::unique_ptr<EvictionPolicy> policy_;
  uint32_t page_tokens_;
  PageId first_page_;  // the pool's first page id (a partition's need not be 0)
  std::unordered_map<Namespace, RadixNode*> roots_;
  std::vector<bool> in_tree_;  // per pool page (by page - first_page_): indexed by this tree
  uint64_t clock_ = 0;
  uint64_t cached_pages_ = 0;
  uint64_t protected_pages_ = 0;
  uint64_t node_heap_bytes_ = 0;  // nodes and their arrays, by mi_usable_size
  TreeStats stats_;
};

}  // namespace radixkv
