// SlotTrie: radixkv's RadixTree over KV slots that belong to someone else, the engine's
// allocator (SGLang's token_to_kv_pool_allocator). radixkv.sglang.RadixCache is a thin Python
// layer over it.
//
// How the tree indexes pages it does not own. RadixTree stores PageIds of a PagePool and takes a
// reference on each; the engine's slots are not pool pages. So the trie keeps its own accounting
// pool (no memory, only ids and refcounts) with one id per cached page, and a table
// first_slot[id] = the engine's first KV slot of that page. Slots of a page are contiguous
// (SGLang's paged allocator hands out whole pages; at page size 1 a page is one slot), so one int64
// per page gives back every slot. The alternative, pool ids equal to the engine's page numbers,
// would need PagePool to allocate a chosen id and would tie the pool's size to the engine's; the
// table costs 8 bytes per page and keeps kv_store unchanged. The pool's capacity bounds the pages
// cached at once (the engine's own capacity is the natural value).
//
// The trie is a PrefixCacheRuntime over that pool (runtime/prefix_cache_runtime.h, its calls
// without sequences): the same front door as every other caller, so the runtime's observers and
// policies apply here as they do to an engine's sequences.
//
// Which slots eviction frees: PrefixCacheRuntime::evict names the page each step takes, in order.
//
// Node handles (NodeRef). An unlocked RadixNode* dies at the next eviction, and a node that loses
// its tail page stands for a shorter prefix than the handle promised. A NodeRef is handed out per
// node and filed under the node's tail page (an edge only ever shrinks from its tail, and a split
// leaves the tail with the node the handle names); evicting that page marks the NodeRef dead (and
// a new one is made if the node is matched again), so lock/unlock through a dead handle is refused
// (std::logic_error) instead of touching freed memory or protecting the wrong prefix. reset()
// kills every handle.
//
// Events (record_events): the runtime's tier events (radix/tier_events.h), one SlotTrieEvent per
// page, with radixkv's page hashes (radix/page_hash.h, the low 64 bits as vLLM-format events
// carry them). Sizes are in pages; the Python layer multiplies by the page size. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv_store/page_pool.h"
#include "radix/tier_events.h"
#include "runtime/prefix_cache_runtime.h"

namespace radixkv::python {

struct NodeRef {
  RadixNode* node = nullptr;
  const void* owner = nullptr;  // the SlotTrie whose tree holds the node
  bool alive = true;
};

// A KV event, as SGLang's BlockStored / BlockRemoved carry them: one per page.
struct SlotTrieEvent {
  enum Kind : uint8_t { kStored, kRemoved, kCleared } kind = kStored;  // kCleared: reset()
  int64_t block_hash = 0;   // chained over the namespace and every page before it
  int64_t parent_hash = 0;  // stored only; 0 for a namespace's first page
  bool has_parent = false;
  std::vector<TokenId> tokens;  // stored only: the page's tokens
};

class SlotTrie {
 public:
  // Throws std::invalid_argument for page_size or capacity_pages 0, or a bad policy spec.
  SlotTrie(uint32_t page_size, uint32_t capacity_pages, std::string policy, bool record_events);
  ~SlotTrie();
  SlotTrie(const SlotTrie&) = delete;
  SlotTrie& operator=(const SlotTrie&) = delete;

  struct Match {
    uint32_t tokens = 0;
    std::shared_ptr<NodeRef> node;  // null when nothing matched (the namespace root)
  };
  // The longest cached page-aligned prefix of `tokens`; appends one slot per matched token to
  // `slots`. Touches the path (LRU) and may split a node, as RadixTree::match.
  Match match(Namespace ns, std::span<const TokenId> tokens, std::vector<int64_t>& slots);

  struct Insert {
    uint32_t cached_tokens = 0;  // leading tokens that were cached already
    uint32_t new_pages = 0;
    std::shared_ptr<NodeRef> node;
  };
  // Caches the whole pages of `tokens`, `slots` giving one slot per token (at least as many as
  // the whole pages cover). The already cached prefix keeps its slots: the caller frees its own
  // duplicates there. Throws std::invalid_argument (changing nothing) when slots are missing or a
  // page's slots are not contiguous, std::runtime_error when the trie would exceed its capacity.
  Insert insert(Namespace ns, std::span<const TokenId> tokens, std::span<const int64_t> slots);

  // Evicts up to `pages` evictable pages in policy order; appends their slots to `slots`, page by
  // page in eviction order. Returns the pages evicted.
  uint64_t evict(uint64_t pages, std::vector<int64_t>& slots);

  // Lock / unlock a node and its path. Return how many pages became protected (lock) or
  // evictable again (unlock). A dead handle, or one of another trie, throws std::logic_error.
  uint64_t lock(const NodeRef& node);
  uint64_t unlock(const NodeRef& node);

  // Drops everything cached (the slots are not handed back: the engine resets its allocator
  // with it, as SGLang's reset does) and kills every handle.
  void reset();

  uint32_t page_size() const { return page_size_; }
  uint32_t capacity_pages() const { return capacity_pages_; }
  uint64_t cached_pages() const { return tree().cached_pages(); }
  uint64_t protected_pages() const { return tree().protected_pages(); }
  uint64_t evictable_pages() const { return tree().evictable_pages(); }
  std::vector<SlotTrieEvent> take_events();
  std::string dump() const { return tree().dump(); }
  // RadixTree::verify(), plus: every cached page has a slot, the pool holds exactly the cached
  // pages. Throws std::logic_error on the first violation.
  void verify() const;

 private:
  class EventRecorder;
  const RadixTree& tree() const { return runtime_->tree(); }
  void build();
  std::shared_ptr<NodeRef> handle(RadixNode* node);
  void check_handle(const NodeRef& node, const char* operation) const;
  void append_slots(PageId page, std::vector<int64_t>& slots) const;

  uint32_t page_size_;
  uint32_t capacity_pages_;
  std::string policy_spec_;
  std::unique_ptr<EventRecorder> recorder_;  // when recording events; outlives runtime_
  std::unique_ptr<PagePool> pool_;
  std::unique_ptr<PrefixCacheRuntime> runtime_;
  std::vector<int64_t> first_slot_;  // by pool page id
  // Live handles, by the tail page of their node (above).
  std::unordered_map<PageId, std::shared_ptr<NodeRef>> handles_;
  std::vector<PageId> evicted_;  // pages of the current evict() call, in order
  std::vector<PageId> scratch_pages_;
  std::vector<PageId> fresh_pages_;
};

}  // namespace radixkv::python
