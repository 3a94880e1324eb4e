// The offline bound: NextUseIndex against a scan of the future, `belady` replay against a naive
// page-level MIN, and belady >= every online policy on generated traces (the samples in data/traces
// are in test_policies_belady_samples.cpp, labelled slow).
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <vector>

#include "tests/test_policies_replay.h"

using namespace radixkv;
using namespace radixkv::tools;
using radixkv::testing::check_bound;
using radixkv::testing::replay;
using radixkv::testing::small_trace;

namespace {

using Prompt = std::vector<TokenId>;

std::vector<Prompt> expand_all(const Trace& trace) {
  TokenExpander expander(trace);
  std::vector<Prompt> prompts;
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const auto tokens = expander.expand(i);
    prompts.emplace_back(tokens.begin(), tokens.end());
  }
  return prompts;
}

// Whether request j's prompt starts with the first `tokens` tokens of request i's (same namespace).
bool shares_prefix(const Trace& trace, const std::vector<Prompt>& prompts, size_t i, size_t j,
                   size_t tokens) {
  return trace.requests[i].ns == trace.requests[j].ns && prompts[j].size() >= tokens &&
         std::equal(prompts[i].begin(), prompts[i].begin() + static_cast<std::ptrdiff_t>(tokens),
                    prompts[j].begin());
}

// Cache mode with MIN written directly over pages: every cached page is keyed by its whole prefix;
// to free a page, scan every evictable one (no cached child, not on the current request's matched
// prefix) for the farthest next use, found by scanning the rest of the trace.
uint64_t naive_belady_hits(const Trace& trace, uint32_t P, uint64_t capacity) {
  using Key = std::pair<Namespace, Prompt>;
  const std::vector<Prompt> prompts = expand_all(trace);
  std::map<Key, uint32_t> children;  // cached pages -> cached children
  const auto key = [&](size_t r, size_t pages) {
    return Key{trace.requests[r].ns, Prompt(prompts[r].begin(), prompts[r].begin() + pages * P)};
  };
  const auto next_use = [&](const Key& k, size_t after) {
    for (size_t j = after + 1; j < prompts.size(); ++j) {
      if (trace.requests[j].ns == k.first && prompts[j].size() >= k.second.size() &&
          std::equal(k.second.begin(), k.second.end(), prompts[j].begin())) {
        return j;
      }
    }
    return std::numeric_limits<size_t>::max();
  };
  uint64_t hits = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const size_t full = prompts[i].size() / P;
    size_t m = 0;
    while (m < full && children.contains(key(i, m + 1))) ++m;
    hits += m * P;
    const size_t want = full - m;
    while (capacity - children.size() < want) {
      auto victim = children.end();
      size_t farthest = 0;
      for (auto it = children.begin(); it != children.end(); ++it) {
        const size_t pages = it->first.second.size() / P;
        if (it->second > 0 || (pages <= m && it->first == key(i, pages))) continue;
        const size_t next = next_use(it->first, i);
        if (victim == children.end() || next > farthest) victim = it, farthest = next;
      }
      if (victim == children.end()) break;
      if (victim->first.second.size() > P) {
        Key parent = victim->first;
        parent.second.resize(parent.second.size() - P);
        --children[parent];
      }
      children.erase(victim);
    }
    const size_t got = std::min<size_t>(want, capacity - children.size());
    for (size_t p = m + 1; p <= m + got; ++p) {
      if (p > 1) ++children[key(i, p - 1)];
      children[key(i, p)] = 0;
    }
  }
  return hits;
}

}  // namespace

TEST_CASE("NextUseIndex names the next request with the same page prefix") {
  for (uint64_t seed : {3u, 4u}) {
    const Trace trace = small_trace(seed);
    const std::vector<Prompt> prompts = expand_all(trace);
    for (uint32_t P : {1u, 4u}) {
      CAPTURE(P);
      const NextUseIndex index(trace, P);
      REQUIRE(index.requests() == trace.requests.size());
      for (size_t i = 0; i < prompts.size(); ++i) {
        REQUIRE(index.pages_of(static_cast<uint32_t>(i)) == prompts[i].size() / P);
        for (size_t p = 0; p < prompts[i].size() / P; ++p) {
          size_t want = NextUseIndex::kNever;
          for (size_t j = i + 1; j < prompts.size(); ++j) {
            if (shares_prefix(trace, prompts, i, j, (p + 1) * P)) {
              want = j;
              break;
            }
          }
          REQUIRE(index.next_use(static_cast<uint32_t>(i), static_cast<uint32_t>(p)) == want);
        }
      }
      CHECK_THROWS_AS(index.next_use(0, index.pages_of(0)), std::out_of_range);
      CHECK_THROWS_AS(index.next_use(static_cast<uint32_t>(prompts.size()), 0), std::out_of_range);
    }
  }
}

TEST_CASE("belady replay equals a naive page-level MIN") {
  for (uint64_t seed : {5u, 6u, 7u}) {
    CAPTURE(seed);
    const Trace trace = small_trace(seed, 15);
    for (uint32_t P : {1u, 3u}) {
      CAPTURE(P);
      const auto index = std::make_shared<const NextUseIndex>(trace, P);
      for (uint64_t capacity : {3u, 10u, 40u}) {
        CAPTURE(capacity);
        const ReplayResult got = replay(trace, P, capacity, "belady", index);
        CHECK(got.ok());
        CHECK(got.policy == "belady");
        CHECK(got.hit_tokens == naive_belady_hits(trace, P, capacity));
      }
    }
  }
}

TEST_CASE("belady is never below any policy on generated multi-turn traces") {
  for (uint64_t seed : {11u, 12u}) {
    CAPTURE(seed);
    const Trace trace = small_trace(seed, 120);
    for (uint32_t P : {1u, 4u}) {
      CAPTURE(P);
      check_bound(trace, P, {8, 30, 120, 400});
    }
  }
}

TEST_CASE("use_belady refuses an index built for another page size or trace") {
  const Trace trace = small_trace(8, 5);
  const auto index = std::make_shared<const NextUseIndex>(trace, 4);
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 1, 2, 2};
  config.capacity_pages = 8;
  CHECK_THROWS_WITH_AS(use_belady(config, index),
                       "belady: the next-use index has 4 tokens per page but the replay uses 2",
                       std::invalid_argument);
  config.layout.page_tokens = 4;
  use_belady(config, index);
  const Trace other = small_trace(9, 40);
  CHECK_THROWS_AS(replay_cache(other, config), std::invalid_argument);
}
