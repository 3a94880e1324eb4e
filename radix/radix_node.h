// RadixNode: one edge of the compressed radix trie, with the pages that hold its KV.
//
// A node's edge is num_pages() whole pages (kept once, as EvictionEntry::pages: its charge):
// page_tokens * num_pages() token ids and one page id
// per page, in order. The root of each namespace has an empty edge. Children are keyed by the hash
// of their first page of tokens, so siblings always differ in their first page.
//
// lock_count() counts the live locks on this node or any node below it (lock() on a node
// increments its whole path up to the root), so a node's count is at least the sum of its
// children's. A node is evictable iff it is not a root, has no children and its lock count is 0;
// exactly the evictable nodes are linked into the eviction policy.
#pragma once

#include <cstdint>
#include <span>

#include "eviction/eviction_entry.h"
#include "kv_store/page_backend.h"
#include "radix/child_table.h"

namespace radixkv {

using TokenId = int32_t;
using Namespace = uint64_t;

class RadixNode : public EvictionEntry {
 public:
  RadixNode* parent() const { return parent_; }
  bool is_root() const { return parent_ == nullptr; }
  bool is_leaf() const { return children_.empty(); }
  Namespace name_space() const { return ns_; }
  uint32_t num_pages() const { return pages; }  // EvictionEntry::pages is the single count
  uint32_t lock_count() const { return lock_count_; }
  uint32_t num_children() const { return children_.size(); }
  std::span<const PageId> page_ids() const { return {pages_, pages}; }
  // Tokens of the edge, given the tree's page size.
  std::span<const TokenId> edge_tokens(uint32_t page_tokens) const {
    return {tokens_, size_t{pages} * page_tokens};
  }

 private:
  friend class RadixTree;

  RadixNode* parent_ = nullptr;
  TokenId* tokens_ = nullptr;  // capacity_pages_ * page_tokens, from kv_store/heap.h
  PageId* pages_ = nullptr;    // capacity_pages_, from kv_store/heap.h
  uint32_t capacity_pages_ = 0;
  uint32_t lock_count_ = 0;
  uint64_t first_page_hash_ = 0;
  Namespace ns_ = 0;
  ChildTable children_;
};

}  // namespace radixkv
