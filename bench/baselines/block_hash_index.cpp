#include "bench/baselines/block_hash_index.h"

#include <xxhash.h>

#include <stdexcept>

namespace radixkv::bench {

BlockHashIndex::BlockHashIndex(uint32_t page_tokens, uint32_t capacity_pages)
    : page_tokens_(page_tokens),
      refcount_(capacity_pages, 0),
      page_hash_(capacity_pages, 0),
      page_cached_(capacity_pages, false),
      prev_(capacity_pages, kInvalidPage),
      next_(capacity_pages, kInvalidPage) {
  if (page_tokens == 0) throw std::invalid_argument("BlockHashIndex: page_tokens must be >= 1");
  for (PageId page = 0; page < capacity_pages; ++page) push_back(page);
}

uint64_t BlockHashIndex::chain(uint64_t parent, const TokenId* page) const {
  return XXH64(page, std::size_t{page_tokens_} * sizeof(TokenId), parent);
}

uint32_t BlockHashIndex::match(Namespace ns, std::span<const TokenId> tokens,
                               std::vector<PageId>* pages) const {
  const std::size_t whole = tokens.size() / page_tokens_;
  uint64_t hash = ns;
  uint32_t matched = 0;
  for (std::size_t i = 0; i < whole; ++i) {
    hash = chain(hash, tokens.data() + i * page_tokens_);
    const auto it = map_.find(hash);
    if (it == map_.end()) break;
    if (pages != nullptr) pages->push_back(it->second);
    ++matched;
  }
  return matched * page_tokens_;
}

uint32_t BlockHashIndex::insert(Namespace ns, std::span<const TokenId> tokens,
                                std::span<const PageId> pages) {
  const std::size_t whole = tokens.size() / page_tokens_;
  if (pages.size() != whole) {
    throw std::invalid_argument("BlockHashIndex::insert: need one page id per whole page");
  }
  uint64_t hash = ns;
  uint32_t cached = 0;
  bool still_cached = true;
  for (std::size_t i = 0; i < whole; ++i) {
    hash = chain(hash, tokens.data() + i * page_tokens_);
    const bool inserted = map_.try_emplace(hash, pages[i]).second;
    if (inserted) {
      page_hash_[pages[i]] = hash;
      page_cached_[pages[i]] = true;
    }
    still_cached = still_cached && !inserted;
    if (still_cached) ++cached;
  }
  return cached * page_tokens_;
}

void BlockHashIndex::erase(Namespace ns, std::span<const TokenId> tokens, uint32_t first_page) {
  const std::size_t whole = tokens.size() / page_tokens_;
  uint64_t hash = ns;
  for (std::size_t i = 0; i < whole; ++i) {
    hash = chain(hash, tokens.data() + i * page_tokens_);
    if (i < first_page) continue;
    const auto it = map_.find(hash);
    if (it == map_.end()) continue;
    page_cached_[it->second] = false;
    map_.erase(it);
  }
}

void BlockHashIndex::unlink(PageId page) {
  const PageId before = prev_[page], after = next_[page];
  (before == kInvalidPage ? head_ : next_[before]) = after;
  (after == kInvalidPage ? tail_ : prev_[after]) = before;
  prev_[page] = next_[page] = kInvalidPage;
}

void BlockHashIndex::push_back(PageId page) {
  prev_[page] = tail_;
  next_[page] = kInvalidPage;
  (tail_ == kInvalidPage ? head_ : next_[tail_]) = page;
  tail_ = page;
}

void BlockHashIndex::lock(std::span<const PageId> pages) {
  for (PageId page : pages) {
    if (refcount_[page]++ == 0) unlink(page);
  }
}

void BlockHashIndex::unlock(std::span<const PageId> pages) {
  // vLLM frees a request's blocks in reverse order, so that the tail is evicted first.
  for (auto it = pages.rbegin(); it != pages.rend(); ++it) {
    if (refcount_[*it] == 0) throw std::logic_error("BlockHashIndex::unlock: page is not locked");
    if (--refcount_[*it] == 0) push_back(*it);
  }
}

uint64_t BlockHashIndex::evict(uint64_t n) {
  uint64_t taken = 0;
  for (; taken < n && head_ != kInvalidPage; ++taken) {
    const PageId page = head_;
    unlink(page);
    if (page_cached_[page]) {
      map_.erase(page_hash_[page]);
      page_cached_[page] = false;
    }
  }
  return taken;
}

void BlockHashIndex::recycle(std::span<const PageId> pages) {
  for (PageId page : pages) {
    if (refcount_[page] == 0 && !queued(page)) push_back(page);
  }
}

}  // namespace radixkv::bench
