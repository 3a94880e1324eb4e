// TierEvents: the observer the radix tree tells about every change of a page's tiers, in the order
// it applies them. The KV events of a serving engine (vLLM's BlockStored / BlockRemoved /
// AllBlocksCleared, with the tier as `medium`) are built on it.
//
//   stored(tier, ns, parent, hashes, tokens)   pages entered `tier`: `hashes` name consecutive
//       pages of one path, `parent` the page before the first (none at a namespace root), and
//       `tokens` are the tokens of those pages (hashes.size() * page_tokens).
//   removed(tier, hashes)                      pages left `tier` (they may stay on another).
//   removed_because(tier, hashes, reason)      the same, with why (RemovalReason); the tree calls
//       this one, which by default forwards to removed(): an observer overrides either.
//   cleared()                                  every page left every tier.
//   flush()                                    the end of one runtime call: one batch per call.
//   dropping(page)                             called synchronously just before a page leaves the
//       trie for good from `page.tier` (the lowest local tier that held it), while page `page.page`
//       of that tier's pool still holds its bytes, so that a writer (the remote tier) can copy
//       them out with what names them (hash, parent hash, tokens). Not a change of tiers: the
//       removed() event follows.
//   inserted(page)                             called synchronously just after a computed page
//       entered the trie (RadixTree::insert: a page new to every tier, on the device), while page
//       `page.page` of the device pool holds its bytes, so that a write-through writer (the
//       remote tier) can copy them out. Not a change of tiers: the stored() event came before it.
//       Pages that enter the device from the host tier are not inserted pages.
// A consumer that applies stored/removed/cleared in order holds exactly the trie's page set per
// tier. Page hashes are radix/page_hash.h's. Calls come from the thread that owns the tree.
//
// A tree has any number of observers (a lower tier that writes what it drops, a KV event
// publisher, a test's log): TierObservers tells each of them every call, in the order they were
// added. None replaces or wraps another.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kv_store/page_backend.h"
#include "radix/page_hash.h"

namespace radixkv {

enum class Tier : uint8_t { kDevice, kHost };
std::string_view to_string(Tier tier);

// Why pages left a tier (sglang#39604 asks for it in BlockRemoved):
//   kEvicted   capacity: the policy named them (device or host eviction) and they left the trie.
//   kDemoted   moved to a lower tier: they left the device and stay readable on the host.
//   kPromoted  moved to a higher tier: a load made them device pages; under write-back their host
//              copies leave the host.
//   kCleared   removed by the engine, not for capacity (RadixTree::erase_leaf). clear_cache()
//              sends cleared(), not removals.
enum class RemovalReason : uint8_t { kEvicted, kDemoted, kPromoted, kCleared };
// "evicted", "demoted", "promoted", "cleared".
std::string_view to_string(RemovalReason reason);

// A page of the trie with what names it and where its bytes are: one about to leave the trie
// (dropping()) or just inserted (inserted()). The spans are valid during the call only.
struct TreePage {
  Tier tier;
  PageHash hash;
  PageHash parent;  // the previous page's hash, namespace_seed(ns) for a path's first page
  std::span<const TokenId> tokens;  // the page's tokens
  PageId page;                      // in the pool of `tier`
};

class TierEvents {
 public:
  virtual ~TierEvents() = default;
  virtual void stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
                      std::span<const PageHash> hashes, std::span<const TokenId> tokens) = 0;
  virtual void removed(Tier tier, std::span<const PageHash> hashes) = 0;
  virtual void removed_because(Tier tier, std::span<const PageHash> hashes, RemovalReason) {
    removed(tier, hashes);
  }
  virtual void cleared() = 0;
  virtual void flush() {}
  virtual void dropping(const TreePage&) {}
  virtual void inserted(const TreePage&) {}
};

// The observers of one tree, each told every call in the order added.
class TierObservers final : public TierEvents {
 public:
  void add(TierEvents* observer) { observers_.push_back(observer); }
  bool empty() const { return observers_.empty(); }
  std::size_t size() const { return observers_.size(); }

  void stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
              std::span<const PageHash> hashes, std::span<const TokenId> tokens) override {
    for (TierEvents* o : observers_) o->stored(tier, ns, parent, hashes, tokens);
  }
  void removed(Tier tier, std::span<const PageHash> hashes) override {
    for (TierEvents* o : observers_) o->removed(tier, hashes);
  }
  void removed_because(Tier tier, std::span<const PageHash> hashes, RemovalReason reason) override {
    for (TierEvents* o : observers_) o->removed_because(tier, hashes, reason);
  }
  void cleared() override {
    for (TierEvents* o : observers_) o->cleared();
  }
  void flush() override {
    for (TierEvents* o : observers_) o->flush();
  }
  void dropping(const TreePage& page) override {
    for (TierEvents* o : observers_) o->dropping(page);
  }
  void inserted(const TreePage& page) override {
    for (TierEvents* o : observers_) o->inserted(page);
  }

 private:
  std::vector<TierEvents*> observers_;
};

}  // namespace radixkv
