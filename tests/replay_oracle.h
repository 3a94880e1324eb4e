// The cache-mode oracle: the rules of docs/design.md ("Cache mode") written directly over pages,
// with no tree. The replay tests compare cache mode with it; the tier tests use it as one LRU
// cache as large as both tiers together.
//
// It keeps one record per cached page, keyed by the whole token prefix up to the end of that page,
// with the logical time of the last request that touched it (a match touches the matched pages;
// an insert touches the whole cached prefix). Eviction scans every page for the leaf page (no
// cached child) with the oldest time, outside the current request's prefix (its matched pages are
// locked, and the pages it is caching now are its own).
// That is the radix tree's LRU-over-leaves with page-by-page tail eviction, written without a
// tree: all pages of one tree node share the node's time, and only its tail page is a leaf.
// With `fifo` a page's time is that of the request that cached it and accesses leave it alone:
// FIFO over leaves (a node's creation time is that of its pages; pages cached by one request form
// one node, so no two leaf pages tie).
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "tools/trace/trace.h"

namespace radixkv::testing {

using OracleKey = std::pair<Namespace, std::vector<TokenId>>;  // a page: its whole prefix

struct OracleResult {
  uint64_t hit_tokens = 0, evicted_pages = 0, uncached_pages = 0, inserted_pages = 0;
  std::vector<uint64_t> request_hits;  // hit tokens of each request, in trace order
  std::set<OracleKey> final_pages;     // what is cached at the end
};

inline OracleResult oracle_replay(const tools::Trace& trace, uint32_t page_tokens,
                                  uint64_t capacity, bool fifo) {
  using Key = OracleKey;
  struct Page {
    uint64_t time = 0;
    uint32_t children = 0;
  };
  std::map<Key, Page> cache;
  uint64_t clock = 0;
  OracleResult result;
  tools::TokenExpander expander(trace);
  auto key = [&](Namespace ns, std::span<const TokenId> tokens, std::size_t pages) {
    return Key{ns, std::vector<TokenId>(tokens.begin(), tokens.begin() + pages * page_tokens)};
  };
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const Namespace ns = trace.requests[i].ns;
    const auto tokens = expander.expand(i);
    const std::size_t full = tokens.size() / page_tokens;
    std::size_t m = 0;
    while (m < full && cache.contains(key(ns, tokens, m + 1))) ++m;
    ++clock;
    if (!fifo) {
      for (std::size_t p = 1; p <= m; ++p) cache[key(ns, tokens, p)].time = clock;
    }
    result.hit_tokens += m * page_tokens;
    result.request_hits.push_back(m * page_tokens);
    std::size_t got = 0;
    for (std::size_t p = m + 1; p <= full; ++p, ++got) {
      if (cache.size() == capacity) {
        auto victim = cache.end();
        for (auto it = cache.begin(); it != cache.end(); ++it) {
          const bool protected_page =
              it->first.first == ns && it->first.second.size() <= (p - 1) * page_tokens &&
              std::equal(it->first.second.begin(), it->first.second.end(), tokens.begin());
          if (it->second.children > 0 || protected_page) continue;
          if (victim == cache.end() || it->second.time < victim->second.time) victim = it;
        }
        if (victim == cache.end()) break;
        if (victim->first.second.size() > page_tokens) {
          Key parent = victim->first;
          parent.second.resize(parent.second.size() - page_tokens);
          --cache[parent].children;
        }
        cache.erase(victim);
        ++result.evicted_pages;
      }
      if (p > 1) ++cache[key(ns, tokens, p - 1)].children;
      cache[key(ns, tokens, p)] = Page{fifo ? clock : 0, 0};
    }
    result.inserted_pages += got;
    result.uncached_pages += full - m - got;
    if (got > 0 && !fifo) {
      ++clock;
      for (std::size_t p = 1; p <= m + got; ++p) cache[key(ns, tokens, p)].time = clock;
    }
  }
  for (const auto& [k, page] : cache) result.final_pages.insert(k);
  return result;
}

}  // namespace radixkv::testing
