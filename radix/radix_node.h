// RadixNode: one edge of the compressed radix trie, with the pages that hold its KV.
//
// A node's edge is num_pages() whole pages: page_tokens * num_pages() token ids. The root of each
// namespace has an empty edge. Children are keyed by the hash of their first page of tokens, so
// siblings always differ in their first page.
//
// Tiers. Each page of an edge lives on the device (the pool sequences are allocated from), on the
// host (the host tier's pool, when the tree has one), or on both (a host copy). The device pages
// of a node are its first device_pages() pages (their ids: page_ids()), and
// EvictionEntry::pages is that count: the device policy's charge. Invariants (RadixTree::verify()
// checks them):
//   1. device pages are a prefix of every root-to-leaf path: a node with device_pages() <
//      num_pages() has no child holding a device page;
//   2. every page of an edge is on at least one tier: page i >= device_pages() has a host page;
//   3. a locked node (pinned by a live sequence) and its ancestors are wholly on the device, except
//      inside a call that is loading them (PrefixCacheRuntime::admit).
// Without a host tier every page is a device page: device_pages() == num_pages().
//
// lock_count() counts the live locks on this node or any node below it (lock() on a node
// increments its whole path up to the root), so a node's count is at least the sum of its
// children's. A node is device-evictable iff it is not a root, has device pages, no child holding
// a device page and lock count 0; exactly those nodes are linked into the device policy. A node is
// host-evictable iff it is an unlocked leaf whose tail page is on the host only; exactly those are
// linked into the host policy, through the EvictionEntry of their HostPart.
//
// Policy state (eviction/eviction_entry.h): each policy keeps its own state of an entry right
// before it, in the same block, sized by the policy in use (LruPolicy: 40 bytes); the node itself
// keeps no access facts. Where two policies need a node's past (a tree with a host tier: the host
// policy meets a node when its first host page comes, and the write-through-selective rule counts
// hits), the tree keeps that past (AccessHistory) in front of the device state.
#pragma once

#include <cstdint>
#include <span>

#include "eviction/eviction_entry.h"
#include "kv_store/page_backend.h"
#include "kv_store/page_copier.h"
#include "radix/child_table.h"

namespace radixkv {

using TokenId = int32_t;
using Namespace = uint64_t;

class RadixNode;

// The host side of a node, allocated (after the host policy's state and before its page array, in
// one block) when the node first gets a host page, so that a tree without a host tier pays one
// pointer per node for it. It is the entry the host policy links: the policy adopts the node's
// past and hears of its later accesses; its `pages` are the node's host-only tail and its
// `prefix_pages` where that tail starts.
struct HostPart : EvictionEntry {
  RadixNode* node = nullptr;
  PageId* page_ids = nullptr;   // per edge page: its host page, or kInvalidPage
  uint32_t count = 0;           // host pages held (valid entries of `pages`)
  CopyTicket load_ticket = 0;   // the latest copy into this node's device pages (a load)
  CopyTicket write_ticket = 0;  // the latest copy from its device pages to the host (write-through)
};

class RadixNode : public EvictionEntry {
 public:
  RadixNode* parent() const { return parent_; }
  bool is_root() const { return parent_ == nullptr; }
  bool is_leaf() const { return children_.empty(); }
  // The namespace, kept by the root: a walk up the path.
  Namespace name_space() const {
    const RadixNode* root = this;
    while (root->parent_ != nullptr) root = root->parent_;
    return root->ns_;
  }
  uint32_t num_pages() const { return pages + host_only_; }
  uint32_t device_pages() const { return pages; }  // EvictionEntry::pages is the device count
  uint32_t lock_count() const { return lock_count_; }
  uint32_t num_children() const { return children_.size(); }
  // Device page ids of the first device_pages() pages.
  std::span<const PageId> page_ids() const { return {page_array(), pages}; }
  // The host page of edge page i, or kInvalidPage when it has none.
  PageId host_page(uint32_t i) const {
    return host_ != nullptr ? host_->page_ids[i] : kInvalidPage;
  }
  uint32_t host_pages() const { return host_ != nullptr ? host_->count : 0; }
  // Tokens of the edge, given the tree's page size.
  std::span<const TokenId> edge_tokens(uint32_t page_tokens) const {
    return {token_array(), size_t{num_pages()} * page_tokens};
  }
  // Calls fn(const RadixNode*) for every child, in no particular order (read-only views of the
  // tree: python/src/slot_trie.h).
  template <typename Fn>
  void for_each_child(Fn&& fn) const {
    children_.for_each([&](uint64_t, const RadixNode* child) { fn(child); });
  }

 private:
  friend class RadixTree;

  // One heap block (kv_store/heap.h) holds, in this order: the node's past when the tree keeps it
  // (see above), the device policy's state, the node, capacity_ page ids, then their tokens, sized
  // by the edge the node was made for (edges only shrink; a root has none): one allocation and one
  // free per node. Lines: evicting a leaf reads the policy's state (its links), the node's fields
  // (the count in EvictionEntry::pages, then parent, host part, first-page hash and child table:
  // what freeing it needs) and its tail page id, and the free writes into the block's first line.
  // With LRU's 40-byte state the state and the node are 112 bytes and the first four page ids end
  // the second line: a leaf of up to four pages is evicted from two adjacent lines, in a block that
  // starts on a line (as mimalloc's blocks of 64-byte multiples do); the tokens are not read.
  // The edge is pages (the device prefix, EvictionEntry::pages) + host_only_ (the pages after it,
  // on the host only); the namespace lives in the root only, where no first-page hash is needed. A
  // tree without a host tier never touches host_only_ or host_.
  PageId* page_array() { return reinterpret_cast<PageId*>(this + 1); }
  const PageId* page_array() const { return reinterpret_cast<const PageId*>(this + 1); }
  TokenId* token_array() { return reinterpret_cast<TokenId*>(page_array() + capacity_); }
  const TokenId* token_array() const {
    return reinterpret_cast<const TokenId*>(page_array() + capacity_);
  }

  uint32_t host_only_ = 0;
  uint32_t lock_count_ = 0;
  uint32_t device_children_ = 0;  // children holding at least one device page
  uint32_t capacity_ = 0;         // pages (and pages of tokens) the block has room for
  RadixNode* parent_ = nullptr;
  HostPart* host_ = nullptr;  // from kv_store/heap.h, or none
  union {
    uint64_t first_page_hash_ = 0;  // every node but a root
    Namespace ns_;                  // a root
  };
  ChildTable children_;
};

// LRU's state, the node and its first four page ids fill two lines (see above).
static_assert(sizeof(RadixNode) == 72);
static_assert(alignof(RadixNode) >= alignof(PageId) && sizeof(PageId) == sizeof(TokenId));

}  // namespace radixkv
