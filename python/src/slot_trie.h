// SlotTrie: radixkv's radix tree over KV slots that belong to someone else, the engine's
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
// without sequences): the same front door as every other caller, so the runtime's observers,
// policies and host tier apply here as they do to an engine's sequences.
//
// The host tier (SGLang's HiCache). With host_pages > 0 the runtime gets a host tier: a second
// accounting pool whose page h stands for the engine's host slots [h * P, (h + 1) * P), and a
// copier that hands each batch to the engine as two slot lists (HostSlotCopies): device -> host
// when the tree backs pages up (write-through at insert, write-back at eviction), host -> device
// when load() brings a host run back into slots the engine allocated. The engine copies the bytes
// before its callback returns (or orders the copy before the KV's next use on its own stream):
// the copier reports every batch done at once.
//
// Which slots eviction frees: PrefixCacheRuntime::evict names the device page each step takes, in
// order (to the host tier or out of the trie); their slots go back to the engine.
//
// Node handles (NodeRef). A handle names the node of a match or insert for Python (SGLang's
// TreeNode). An unlocked RadixNode* dies at the next eviction, and a node that loses its tail page
// stands for a shorter prefix than the handle promised. So a handle lives exactly as long as its
// node's tail page is in the trie, on either tier (an edge only shrinks from its tail, and a split
// leaves the tail with the node the handle names), and a dead handle refuses lock/unlock and every
// view (std::logic_error) instead of touching freed memory or the wrong prefix; the node is matched
// again for a new one. reset() kills every handle. How the trie learns that a tail page left:
//   - one tier: a page evicted from the device leaves the trie, and evict() reports its page id;
//     handles are filed under their tail page's id, with a bit per pool page saying which are.
//   - with a host tier: pages move between tiers and ids change, so handles are filed under
//     their tail page's hash (radix/page_hash.h; page hashes are on then), and the trie observes
//     the tier events (radix/tier_events.h) to keep each tail's tiers; a tail on no tier at the
//     end of a call kills its handle.
// A handle's views (key, slots, parent, children, facts) read the live node.
//
// Events (record_events): the runtime's tier events (radix/tier_events.h), one SlotTrieEvent per
// page, with radixkv's page hashes (the low 64 bits, as vLLM-format events carry them). Sizes are
// in pages; the Python layer multiplies by the page size. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv_store/page_pool.h"
#include "radix/page_hash.h"
#include "radix/tier_events.h"
#include "runtime/prefix_cache_runtime.h"

namespace radixkv::python {

struct NodeRef {
  RadixNode* node = nullptr;
  const void* owner = nullptr;  // the SlotTrie whose tree holds the node
  uint64_t id = 0;              // unique among the trie's handles
  bool alive = true;
};

// A KV event, as SGLang's BlockStored / BlockRemoved carry them: one per page.
struct SlotTrieEvent {
  enum Kind : uint8_t { kStored, kRemoved, kCleared } kind = kStored;  // kCleared: reset()
  Tier tier = Tier::kDevice;
  int64_t block_hash = 0;   // chained over the namespace and every page before it
  int64_t parent_hash = 0;  // stored only; 0 for a namespace's first page
  bool has_parent = false;
  std::vector<TokenId> tokens;  // stored only: the page's tokens
};

// The engine's side of the host tier: copies the KV bytes of whole pages between its device slots
// and its host slots. Called inside the trie's calls; must not call back into the trie.
class HostSlotCopies {
 public:
  virtual ~HostSlotCopies() = default;
  virtual void write_to_host(std::span<const int64_t> device, std::span<const int64_t> host) = 0;
  virtual void load_from_host(std::span<const int64_t> host, std::span<const int64_t> device) = 0;
};

struct SlotTrieConfig {
  uint32_t page_size = 1;
  uint32_t capacity_pages = 0;  // device pages cached at once
  std::string policy = "lru";   // make_policy() spec
  bool record_events = false;
  // The host tier: none with host_pages 0; `copies` must then be given and outlive the trie.
  uint32_t host_pages = 0;
  std::string host_policy = "lru";
  std::string write_policy = "write_through";  // radix/tier_config.h
  HostSlotCopies* copies = nullptr;
};

class SlotTrie {
 public:
  // Throws std::invalid_argument for page_size or a capacity 0, a bad policy or write policy, or a
  // host tier without copies.
  explicit SlotTrie(SlotTrieConfig config);
  ~SlotTrie();
  SlotTrie(const SlotTrie&) = delete;
  SlotTrie& operator=(const SlotTrie&) = delete;

  struct Match {
    uint32_t device_tokens = 0;  // the leading run on the device, whose slots matched_slots gives
    uint32_t host_tokens = 0;    // the run after it, on the host tier only
    std::shared_ptr<NodeRef> device_node;  // where the device run ends; null: the namespace root
    std::shared_ptr<NodeRef> node;         // where the whole match ends (== device_node without
                                           // a host run)
  };
  // The longest cached page-aligned prefix of `tokens` on either tier. Touches the path (the
  // policies see `hint`) and may split a node, as RadixTree::match; with a host run it also splits
  // where the device run ends, so that device_node ends exactly there. The device run's pages stay
  // in matched_pages() until the next call.
  Match match(Namespace ns, std::span<const TokenId> tokens, AccessHint hint = {});
  std::span<const PageId> matched_pages() const { return matched_; }
  // Writes the slots of `pages` (page_size each) to `out`.
  void write_slots(std::span<const PageId> pages, int64_t* out) const;

  struct Insert {
    uint32_t cached_tokens = 0;  // leading tokens the device had already: the caller frees its
                                 // own slots there (host-only pages take the caller's slots)
    uint32_t new_pages = 0;      // device pages that took the caller's slots
    std::shared_ptr<NodeRef> node;
  };
  // Caches the whole pages of `tokens`, `slots` giving one slot per token (at least as many as
  // the whole pages cover). Throws std::invalid_argument (changing nothing) when slots are missing
  // or a new page's slots are not contiguous, std::runtime_error when the trie would exceed its
  // capacity. `hint` reaches the policies (priority; counts_as_hit false for a chunked insert).
  Insert insert(Namespace ns, std::span<const TokenId> tokens, std::span<const int64_t> slots,
                AccessHint hint = {});

  // Evicts up to `pages` evictable device pages in policy order and writes their slots to `out`
  // (room for pages * page_size), page by page in eviction order. Returns the pages evicted.
  uint64_t evict(uint64_t pages, int64_t* out);

  // Lock / unlock a node and its path. Return how many pages became protected (lock) or
  // evictable again (unlock). A dead handle, one of another trie, or (lock) a node not wholly on
  // the device (load it first) throws std::logic_error.
  uint64_t lock(const NodeRef& node);
  uint64_t unlock(const NodeRef& node);

  // Host tier: the host-only tokens on the path to `end`, and load(): brings them back into the
  // engine's device slots `slots` (one per token, contiguous per page), the engine copying the
  // bytes (HostSlotCopies::load_from_host) before it returns. Throws std::invalid_argument for
  // the wrong number of slots, std::runtime_error when the device is full.
  uint32_t host_tokens_above(const NodeRef& end) const;
  void load(const NodeRef& end, std::span<const int64_t> slots);

  // Drops everything cached on every tier (the slots are not handed back: the engine resets its
  // allocators with it, as SGLang's reset does) and kills every handle.
  void reset();

  // --- Views of a live node (SGLang's TreeNode fields), each throwing std::logic_error for a
  // dead handle. The parent is null for a namespace's first edges.
  std::span<const TokenId> key(const NodeRef& node) const;
  std::optional<TokenId> token_before(const NodeRef& node) const;  // the parent edge's last
  Namespace name_space(const NodeRef& node) const;
  std::shared_ptr<NodeRef> parent(const NodeRef& node);
  std::vector<std::shared_ptr<NodeRef>> children(const NodeRef& node);
  std::vector<std::shared_ptr<NodeRef>> root_children(Namespace ns);  // none for an unused one
  const RadixNode& facts(const NodeRef& node) const;                  // pages, locks
  // The node's past as the device policy keeps it (eviction/eviction_policy.h: the fields a policy
  // does not keep read as their defaults; LRU keeps no hit count, LFU does).
  AccessHistory history(const NodeRef& node) const;
  std::vector<int64_t> device_slots(const NodeRef& node) const;
  std::optional<std::vector<int64_t>> host_slots(const NodeRef& node) const;  // all pages' or none
  std::vector<PageHash> page_hashes(const NodeRef& node) const;
  // Every cached device slot of namespace `ns`, depth first.
  void append_all_slots(Namespace ns, std::vector<int64_t>& out) const;

  uint32_t page_size() const { return config_.page_size; }
  uint32_t capacity_pages() const { return config_.capacity_pages; }
  bool has_host_tier() const { return config_.host_pages > 0; }
  uint64_t cached_pages() const { return tree().cached_pages(); }
  uint64_t protected_pages() const { return tree().protected_pages(); }
  uint64_t evictable_pages() const { return tree().evictable_pages(); }
  uint64_t host_cached_pages() const { return has_host_tier() ? tree().host_cached_pages() : 0; }
  std::vector<SlotTrieEvent> take_events();
  std::string dump() const { return tree().dump(); }
  // RadixTree::verify() and the runtime's accounting, plus: the pool holds exactly the cached
  // pages, every registered handle is alive and filed under its node's tail. Throws
  // std::logic_error on the first violation.
  void verify() const;

 private:
  class EventRecorder;
  class Handles;
  class HostCopier;
  const RadixTree& tree() const { return runtime_->tree(); }
  void build();
  void refresh_clock();
  std::shared_ptr<NodeRef> handle(RadixNode* node);
  const RadixNode* check_handle(const NodeRef& node, const char* operation) const;
  // Refuses (std::logic_error) every call once a copy to the host failed (HostCopier).
  void check_healthy(const char* operation) const;
  uint32_t allocate_pages(std::span<const int64_t> slots, uint32_t first_page, uint32_t count,
                          const char* operation);

  SlotTrieConfig config_;
  std::unique_ptr<EventRecorder> recorder_;  // when recording events; outlives runtime_
  std::unique_ptr<Handles> handles_;         // outlives runtime_ (it may observe its events)
  std::unique_ptr<PagePool> pool_;
  std::unique_ptr<PagePool> host_pool_;
  std::unique_ptr<HostCopier> copier_;
  std::unique_ptr<PrefixCacheRuntime> runtime_;
  std::vector<int64_t> first_slot_;  // by pool page id
  std::vector<PageId> matched_;      // the device run of the latest match
  std::vector<PageId> scratch_pages_;
  std::vector<PageId> fresh_pages_;
  std::vector<PageId> evicted_;
};

}  // namespace radixkv::python
