// Cache-mode replay against a naive oracle: the rules of docs/design.md written directly over
// pages.
//
// The oracle keeps one record per cached page, keyed by the whole token prefix up to the end of
// that page, with the logical time of the last request that touched it (a match touches the
// matched pages; an insert touches the whole cached prefix). Eviction scans every page for the
// leaf page (no cached child) with the oldest time, outside the current request's prefix (its
// matched pages are locked, and the pages it is caching now are its own).
// That is the radix tree's LRU-over-leaves with page-by-page tail eviction, written without a
// tree: all pages of one tree node share the node's time, and only its tail page is a leaf.
// With `fifo` a page's time is that of the request that cached it and accesses leave it alone:
// FIFO over leaves (a node's creation time is that of its pages; pages cached by one request form
// one node, so no two leaf pages tie).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>

#include "tests/small_traces.h"
#include "tools/replay/cache_replay.h"
#include "tools/trace/random.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

struct OracleResult {
  uint64_t hit_tokens = 0, evicted_pages = 0, uncached_pages = 0, inserted_pages = 0;
};

OracleResult oracle_replay(const Trace& trace, uint32_t page_tokens, uint64_t capacity, bool fifo) {
  using Key = std::pair<Namespace, std::vector<TokenId>>;
  struct Page {
    uint64_t time = 0;
    uint32_t children = 0;
  };
  std::map<Key, Page> cache;
  uint64_t clock = 0;
  OracleResult result;
  TokenExpander expander(trace);
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
  return result;
}

void compare_policy(const Trace& trace, uint32_t page_tokens, uint64_t capacity,
                    const std::string& policy) {
  CAPTURE(page_tokens);
  CAPTURE(capacity);
  CAPTURE(policy);
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 1, 2, page_tokens};
  config.capacity_pages = capacity;
  config.policy = policy;
  const ReplayResult got = replay_cache(trace, config);
  const OracleResult want = oracle_replay(trace, page_tokens, capacity, policy == "fifo");
  CHECK(got.hit_tokens == want.hit_tokens);
  CHECK(got.evicted_pages == want.evicted_pages);
  CHECK(got.inserted_pages == want.inserted_pages);
  CHECK(got.uncached_pages == want.uncached_pages);
  CHECK(got.pages_leaked == 0);
  CHECK(got.accounting_error == "");
}

void compare(const Trace& trace, uint32_t page_tokens, uint64_t capacity) {
  for (const char* policy : {"lru", "fifo"}) {
    compare_policy(trace, page_tokens, capacity, policy);
  }
}

}  // namespace

TEST_CASE("cache mode equals the naive oracle on generated multi-turn traces") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    GenConfig config = radixkv::testing::small_gen_config(seed);
    config.conversations = 30;
    config.system_prompts = 4;
    config.namespaces = 1 + seed % 2;
    const Trace trace = radixkv::testing::generated_trace(config);
    for (uint32_t page_tokens : {1u, 3u, 8u}) {
      for (uint64_t capacity : {2u, 7u, 25u, 80u}) compare(trace, page_tokens, capacity);
    }
  }
}

TEST_CASE("cache mode equals the naive oracle on random Mooncake-style block traces") {
  Rng rng(42);
  std::string text;
  // Prefix-hashed block ids: a request extends one of a few shared stems, as in Mooncake.
  for (int r = 0; r < 120; ++r) {
    const int stem = static_cast<int>(rng.below(5));
    const int blocks = 1 + static_cast<int>(rng.below(6));
    std::string ids;
    for (int b = 0; b < blocks; ++b) {
      const int id = b < 3 ? stem * 100 + b : 1000 + r * 10 + b;
      ids += fmt::format("{}{}", b ? "," : "", id);
    }
    const int input = (blocks - 1) * 512 + 1 + static_cast<int>(rng.below(512));
    text += fmt::format(
        "{{\"timestamp\": {}, \"input_length\": {}, \"output_length\": 1, \"hash_ids\": [{}]}}\n",
        r, input, ids);
  }
  const Trace trace = parse_mooncake(text, "random");
  for (uint64_t capacity : {1u, 4u, 10u, 30u}) compare(trace, 512, capacity);
  compare(trace, 128, 40);
}
