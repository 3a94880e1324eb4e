// TierOracle: a naive two-tier model of the cache, one record per cached page (keyed by the whole
// token prefix through that page), written from the rules of radix/radix_tree.h and
// radix/tier_config.h with no nodes, no hooks and no batching: which pages are on the device
// (with their ids), which on the host, and which LRU evicts from either tier, victim by victim.
//
// Page-level forms of the tree's node rules (a node's pages share its facts and its locks, and a
// lock always ends at a node's end, so these are the same rules):
//   - device-evictable page: on the device, unlocked, no child page on the device (it is the
//     device tail of a node with no child holding device pages);
//   - host-evictable page: on the host only, unlocked, no child page at all (a leaf's tail);
//   - LRU on either tier: the evictable page with the oldest access (no two ever tie: an access
//     touches one path, and only the deepest device page of a path is device-evictable);
//   - host room: min(pool pages - host pages, budget limit - counted pages), where counted pages
//     leave out (under write-back) the host-only pages of locked nodes; a copy to a full host
//     first evicts what it needs;
//   - device eviction of n pages under write-back makes room for min(n, evictable) pages first;
//     if the host cannot make that much, the oldest victims leave the trie (with every page below
//     them) and the newest go to the host.
// Write-through copies the pages of a new leaf when it is inserted, in order, as far as room
// goes. write_through_selective copies at lock time node by node, which depends on node
// boundaries: the oracle does not model it.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "radix/page_hash.h"
#include "radix/tier_config.h"

namespace radixkv::testing {

class TierOracle {
 public:
  struct Page {
    PageId device = kInvalidPage;  // its device page, or none
    bool host = false;             // it has a host page
    uint64_t last_access = 0;
    uint64_t hits = 0;
    uint32_t locks = 0;
    PageHash hash;
  };
  using Key = std::pair<Namespace, std::vector<TokenId>>;

  struct Budget {
    uint64_t limit = 0;  // cached host pages the budget allows (at most the pool)
    uint64_t pool = 0;   // host pool pages
    uint64_t high = 0, low = 0;
  };

  TierOracle(uint32_t page_tokens, WritePolicy write, Budget host)
      : P_(page_tokens), write_(write), host_(host) {}

  // Leading pages of `tokens` cached on any tier; and of those, the leading device run.
  uint32_t cached(Namespace ns, std::span<const TokenId> tokens) const {
    uint32_t k = 0;
    while (size_t{k + 1} * P_ <= tokens.size() && pages_.contains(key(ns, tokens, k + 1))) ++k;
    return k;
  }
  uint32_t device_run(Namespace ns, std::span<const TokenId> tokens) const {
    uint32_t k = 0;
    while (size_t{k + 1} * P_ <= tokens.size()) {
      const auto it = pages_.find(key(ns, tokens, k + 1));
      if (it == pages_.end() || it->second.device == kInvalidPage) break;
      ++k;
    }
    return k;
  }
  std::vector<PageId> device_ids(Namespace ns, std::span<const TokenId> tokens, uint32_t k) const {
    std::vector<PageId> ids;
    for (uint32_t j = 1; j <= k; ++j) ids.push_back(pages_.at(key(ns, tokens, j)).device);
    return ids;
  }

  void touch(Namespace ns, std::span<const TokenId> tokens, uint32_t k) {
    ++clock_;
    for (uint32_t j = 1; j <= k; ++j) {
      Page& page = pages_.at(key(ns, tokens, j));
      page.last_access = clock_;
      ++page.hits;
    }
  }
  void lock(Namespace ns, std::span<const TokenId> tokens, uint32_t k, int delta) {
    for (uint32_t j = 1; j <= k; ++j) pages_.at(key(ns, tokens, j)).locks += delta;
  }

  // The host run [d, k) of a locked match gets the device pages `ids` (load()).
  void load(Namespace ns, std::span<const TokenId> tokens, uint32_t d,
            std::span<const PageId> ids) {
    for (uint32_t j = 0; j < ids.size(); ++j) {
      Page& page = pages_.at(key(ns, tokens, d + j + 1));
      page.device = ids[j];
      if (write_.write_back()) page.host = false;
    }
  }

  // insert() of `tokens` with one id per whole page; returns the device pages taken (host-only
  // pages that got device pages, and new ones).
  uint32_t insert(Namespace ns, std::span<const TokenId> tokens, std::span<const PageId> ids) {
    const auto n = static_cast<uint32_t>(tokens.size() / P_);
    const uint32_t cached_pages = cached(ns, tokens);
    const uint32_t device = device_run(ns, tokens);
    load(ns, tokens, device, ids.subspan(device, cached_pages - device));
    for (uint32_t j = cached_pages; j < n; ++j) {
      Page page;
      page.device = ids[j];
      page.hash = chain_page_hash(j == 0 ? namespace_seed(ns) : pages_.at(key(ns, tokens, j)).hash,
                                  tokens.subspan(size_t{j} * P_, P_));
      pages_[key(ns, tokens, j + 1)] = page;
    }
    touch(ns, tokens, n);
    if (write_.mode == WritePolicy::Mode::kWriteThrough && n > cached_pages) {
      std::vector<Key> fresh;
      for (uint32_t j = cached_pages; j < n; ++j) fresh.push_back(key(ns, tokens, j + 1));
      back_up(fresh);
    }
    return n - device;
  }

  // Evicts up to n device pages, as RadixTree::evict_pages(); returns how many.
  uint64_t evict_device(uint64_t n) {
    const uint64_t want = std::min(n, device_evictable());
    uint64_t room = write_.write_back() ? make_room(want) : 0;
    uint64_t to_drop = write_.write_back() ? want - room : 0;
    uint64_t released = 0;
    for (; released < n; ++released) {
      const auto victim = oldest([&](const Key& k, const Page& p) {
        return p.device != kInvalidPage && p.locks == 0 &&
               !any_child(k, [](const Page& c) { return c.device != kInvalidPage; });
      });
      if (!victim) break;
      Page& page = pages_.at(*victim);
      if (!page.host && to_drop == 0 && room > 0) {
        page.host = true;
        --room;
      }
      if (page.host) {
        page.device = kInvalidPage;
        continue;
      }
      if (to_drop > 0) --to_drop;
      drop(*victim);
    }
    return released;
  }

  // Evicts up to n host pages, as RadixTree::evict_host_pages(); returns how many.
  uint64_t evict_host(uint64_t n) {
    uint64_t evicted = 0;
    for (; evicted < n; ++evicted) {
      const auto victim = oldest([&](const Key& k, const Page& p) {
        return p.host && p.device == kInvalidPage && p.locks == 0 &&
               !any_child(k, [](const Page&) { return true; });
      });
      if (!victim) break;
      pages_.erase(*victim);
    }
    return evicted;
  }

  uint64_t enforce_host_watermarks() {
    const uint64_t counted = counted_host();
    return counted > host_.high ? evict_host(counted - host_.low) : 0;
  }

  uint64_t device_pages() const {
    return std::count_if(pages_.begin(), pages_.end(),
                         [](const auto& e) { return e.second.device != kInvalidPage; });
  }
  uint64_t host_pages() const {
    return std::count_if(pages_.begin(), pages_.end(), [](const auto& e) { return e.second.host; });
  }
  // Unlocked device pages: what device eviction can take.
  uint64_t device_evictable() const {
    return std::count_if(pages_.begin(), pages_.end(), [](const auto& e) {
      return e.second.device != kInvalidPage && e.second.locks == 0;
    });
  }
  bool tie() const { return tie_; }
  const std::map<Key, Page>& pages() const { return pages_; }
  std::map<Key, Page>& pages() { return pages_; }
  uint32_t page_tokens() const { return P_; }

  // The hashes of the pages on the device (or the host), sorted.
  std::vector<PageHash> tier_hashes(bool device) const {
    std::vector<PageHash> hashes;
    for (const auto& [k, page] : pages_) {
      if (device ? page.device != kInvalidPage : page.host) hashes.push_back(page.hash);
    }
    std::sort(hashes.begin(), hashes.end());
    return hashes;
  }

 private:
  Key key(Namespace ns, std::span<const TokenId> tokens, uint32_t k) const {
    return {ns, std::vector<TokenId>(tokens.begin(), tokens.begin() + size_t{k} * P_)};
  }

  // Whether a page one page longer than `k` (a child page) satisfies `pred`. Extensions of a key
  // sort right after it.
  template <typename Pred>
  bool any_child(const Key& k, Pred&& pred) const {
    for (auto it = pages_.upper_bound(k); it != pages_.end(); ++it) {
      const Key& other = it->first;
      if (other.first != k.first || other.second.size() <= k.second.size() ||
          !std::equal(k.second.begin(), k.second.end(), other.second.begin())) {
        break;
      }
      if (other.second.size() == k.second.size() + P_ && pred(it->second)) return true;
    }
    return false;
  }

  template <typename Eligible>
  std::optional<Key> oldest(Eligible&& eligible) {
    std::optional<Key> best;
    uint64_t best_access = 0;
    for (const auto& [k, page] : pages_) {
      if (!eligible(k, page)) continue;
      if (best && page.last_access == best_access) tie_ = true;
      if (!best || page.last_access < best_access) {
        best = k;
        best_access = page.last_access;
      }
    }
    return best;
  }

  // The page and every page below it leave the trie.
  void drop(const Key& k) {
    auto it = pages_.find(k);
    while (it != pages_.end() && it->first.first == k.first &&
           it->first.second.size() >= k.second.size() &&
           std::equal(k.second.begin(), k.second.end(), it->first.second.begin())) {
      it = pages_.erase(it);
    }
  }

  uint64_t counted_host() const {
    uint64_t cached = 0, pinned = 0;
    for (const auto& [k, page] : pages_) {
      cached += page.host ? 1 : 0;
      pinned += page.host && page.device == kInvalidPage && page.locks > 0 ? 1 : 0;
    }
    return write_.write_back() ? cached - pinned : cached;
  }
  uint64_t host_room() const {
    const uint64_t counted = counted_host();
    const uint64_t budget = host_.limit > counted ? host_.limit - counted : 0;
    return std::min(budget, host_.pool - host_pages());
  }
  uint64_t make_room(uint64_t n) {
    uint64_t room = host_room();
    if (room < n) {
      evict_host(n - room);
      room = host_room();
    }
    return std::min(room, n);
  }
  void back_up(const std::vector<Key>& keys) {
    uint64_t room = make_room(keys.size());
    for (const Key& k : keys) {
      if (room == 0) break;
      pages_.at(k).host = true;
      --room;
    }
  }

  uint32_t P_;
  WritePolicy write_;
  Budget host_;
  uint64_t clock_ = 0;
  bool tie_ = false;
  std::map<Key, Page> pages_;
};

}  // namespace radixkv::testing
