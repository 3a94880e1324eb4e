// PageOracle: the naive model of the cache that the property test checks the radix tree against.
//
// It keeps one entry per cached page, keyed by the whole token prefix that ends with that page,
// in a std::map: no compression, no splits, no hooks. Matching walks prefixes one page at a time;
// LRU eviction scans every entry for the evictable leaf page with the oldest access. Slow and
// obviously right, which is the point.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "radix/radix_tree.h"

namespace radixkv::testing {

class PageOracle {
 public:
  struct Page {
    PageId id = kInvalidPage;
    uint64_t last_access = 0;
    uint32_t locks = 0;
    uint32_t children = 0;
  };
  using Key = std::pair<Namespace, std::vector<TokenId>>;

  explicit PageOracle(uint32_t page_tokens) : page_tokens_(page_tokens) {}

  // Leading cached pages of `tokens`, with their ids appended to `ids` when given.
  uint32_t match_pages(Namespace ns, std::span<const TokenId> tokens,
                       std::vector<PageId>* ids = nullptr) const {
    uint32_t k = 0;
    while (size_t{k + 1} * page_tokens_ <= tokens.size()) {
      const auto it = pages_.find(key(ns, tokens, k + 1));
      if (it == pages_.end()) break;
      if (ids) ids->push_back(it->second.id);
      ++k;
    }
    return k;
  }

  void touch(Namespace ns, std::span<const TokenId> tokens, uint32_t k) {
    ++clock_;
    for (uint32_t j = 1; j <= k; ++j) pages_.at(key(ns, tokens, j)).last_access = clock_;
  }

  // Adds the pages past the cached prefix; returns the cached prefix in pages. Touches the path.
  uint32_t insert(Namespace ns, std::span<const TokenId> tokens, std::span<const PageId> ids) {
    const uint32_t cached = match_pages(ns, tokens);
    for (uint32_t j = cached; j < ids.size(); ++j) {
      pages_[key(ns, tokens, j + 1)] = Page{ids[j], 0, 0, 0};
      if (j > 0) ++pages_.at(key(ns, tokens, j)).children;
    }
    touch(ns, tokens, static_cast<uint32_t>(ids.size()));
    return cached;
  }

  void lock(Namespace ns, std::span<const TokenId> tokens, uint32_t k, int delta) {
    for (uint32_t j = 1; j <= k; ++j) pages_.at(key(ns, tokens, j)).locks += delta;
  }

  // The pages LRU would evict, one at a time, for `n` pages. `tie` reports whether two candidates
  // ever shared the oldest stamp, where the order is not determined.
  std::set<PageId> lru_victims(uint64_t n, bool& tie) const {
    std::map<Key, Page> copy = pages_;
    std::set<PageId> victims;
    tie = false;
    for (uint64_t i = 0; i < n; ++i) {
      std::optional<std::map<Key, Page>::iterator> best;
      for (auto it = copy.begin(); it != copy.end(); ++it) {
        const Page& p = it->second;
        if (p.locks != 0 || p.children != 0) continue;
        if (best && p.last_access == (*best)->second.last_access) tie = true;
        if (!best || p.last_access < (*best)->second.last_access) best = it;
      }
      if (!best) break;
      victims.insert((*best)->second.id);
      remove(copy, *best);
    }
    return victims;
  }

  // Drops the pages whose ids are in `gone` (which the tree evicted), after checking that each was
  // evictable and that no page left behind lost an ancestor. Returns a problem, or "" when legal.
  std::string apply_eviction(const std::set<PageId>& gone) {
    for (auto it = pages_.begin(); it != pages_.end();) {
      if (!gone.count(it->second.id)) {
        ++it;
        continue;
      }
      if (it->second.locks != 0) return "evicted a locked page " + std::to_string(it->second.id);
      auto next = std::next(it);
      remove(pages_, it);
      it = next;
    }
    for (const auto& [k, page] : pages_) {
      if (k.second.size() > page_tokens_) {
        Key parent{k.first, {k.second.begin(), k.second.end() - page_tokens_}};
        if (!pages_.count(parent)) return "a page outlived its parent";
      }
    }
    return "";
  }

  // Pages of the model that `tree` no longer indexes: what an operation evicted.
  std::set<PageId> gone_from(const RadixTree& tree) const {
    std::set<PageId> gone;
    for (const auto& [k, page] : pages_) {
      if (!tree.indexes_page(page.id)) gone.insert(page.id);
    }
    return gone;
  }

  // Compares the whole cached set with `tree`: sizes, pinned pages, and every leaf path's page
  // ids. Returns the first difference, or "" when they agree.
  std::string differences(const RadixTree& tree) const {
    if (tree.cached_pages() != size()) {
      return "the tree caches " + std::to_string(tree.cached_pages()) + " pages, the oracle " +
             std::to_string(size());
    }
    if (tree.evictable_pages() != unlocked()) return "evictable pages differ";
    for (const auto& [k, page] : pages_) {
      if (page.children != 0) continue;
      std::vector<PageId> got, want;
      if (tree.peek(k.first, k.second, &got) != k.second.size()) return "a cached path is missing";
      match_pages(k.first, k.second, &want);
      if (got != want) return "a cached path has other page ids";
    }
    return "";
  }

  uint64_t size() const { return pages_.size(); }
  uint64_t unlocked() const {
    uint64_t n = 0;
    for (const auto& [k, p] : pages_) n += p.locks == 0 ? 1 : 0;
    return n;
  }
  const std::map<Key, Page>& pages() const { return pages_; }

 private:
  Key key(Namespace ns, std::span<const TokenId> tokens, uint32_t k) const {
    return {ns, std::vector<TokenId>(tokens.begin(), tokens.begin() + size_t{k} * page_tokens_)};
  }
  void remove(std::map<Key, Page>& pages, std::map<Key, Page>::iterator it) const {
    const Key& k = it->first;
    if (k.second.size() > page_tokens_) {
      Key parent{k.first, {k.second.begin(), k.second.end() - page_tokens_}};
      // The parent may be gone already when one eviction took both it and this page.
      if (auto p = pages.find(parent); p != pages.end()) --p->second.children;
    }
    pages.erase(it);
  }

  uint32_t page_tokens_;
  uint64_t clock_ = 0;
  std::map<Key, Page> pages_;
};

}  // namespace radixkv::testing
