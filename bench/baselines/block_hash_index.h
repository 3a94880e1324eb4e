// BlockHashIndex: the chained block-hash prefix index of vLLM's prefix caching and mistral.rs,
// rebuilt here as a baseline for bench/.
//
// Every full page of a key gets a hash chained with its parent's: h_0 = XXH64(page 0, seed = ns),
// h_i = XXH64(page i, seed = h_{i-1}). One hash map goes from chain hash to page id. The longest
// cached prefix is found page by page: hash the next page, look it up, stop at the first miss.
// Like those engines it trusts the 64-bit hash and never compares tokens; it stores no tokens.
// Pinning follows vLLM's block pool: a refcount per page, and a page with refcount 0 sits in a
// free queue (a doubly linked list by page id, least recently freed first) from which it is
// unlinked when first pinned. Eviction is vLLM's too: pop the head of the free queue and drop its
// hash from the map.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "radix/radix_node.h"

namespace radixkv::bench {

class BlockHashIndex {
 public:
  // Page ids must be below capacity_pages.
  BlockHashIndex(uint32_t page_tokens, uint32_t capacity_pages);

  uint32_t page_tokens() const { return page_tokens_; }
  // Tokens of the longest cached page-aligned prefix; its page ids are appended to `pages`.
  uint32_t match(Namespace ns, std::span<const TokenId> tokens, std::vector<PageId>* pages) const;
  // Indexes every whole page of `tokens` not yet indexed, under the given page ids
  // (pages.size() == tokens.size() / page_tokens); returns the tokens that were already cached.
  uint32_t insert(Namespace ns, std::span<const TokenId> tokens, std::span<const PageId> pages);
  // Drops the entries of the whole pages of `tokens` from `first_page` on (undoes an insert).
  void erase(Namespace ns, std::span<const TokenId> tokens, uint32_t first_page);

  // vLLM's touch() and free(): pin and unpin the pages of a block table.
  void lock(std::span<const PageId> pages);
  void unlock(std::span<const PageId> pages);
  // Takes up to n pages from the head of the free queue (they leave it, as when vLLM hands them
  // to a new request), dropping the map entry of each that was cached; returns how many it took.
  uint64_t evict(uint64_t n);
  // Appends unpinned pages that are not in the free queue (taken by evict) to its tail.
  void recycle(std::span<const PageId> pages);

  std::size_t size() const { return map_.size(); }

 private:
  uint64_t chain(uint64_t parent, const TokenId* page) const;
  void unlink(PageId page);
  void push_back(PageId page);
  bool queued(PageId page) const { return page == head_ || prev_[page] != kInvalidPage; }

  uint32_t page_tokens_;
  std::unordered_map<uint64_t, PageId> map_;
  std::vector<uint32_t> refcount_;
  std::vector<uint64_t> page_hash_;  // the chain hash a page is cached under, when page_cached_
  std::vector<bool> page_cached_;
  // The free queue: prev_/next_ by page id, kInvalidPage at the ends.
  std::vector<PageId> prev_, next_;
  PageId head_ = kInvalidPage, tail_ = kInvalidPage;
};

}  // namespace radixkv::bench
