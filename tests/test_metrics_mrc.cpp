// The miss-ratio curve's parts against naive models: RecencyIndex against a recency list and a
// naive LRU stack, ShardsMrc at rate 1 against LRU over a list of pages per capacity, and the
// fixed-size sampler's bounds (memory, keys, a rate that only falls).
#include <doctest/doctest.h>

#include <algorithm>
#include <list>
#include <optional>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "common/splitmix64.h"
#include "metrics/prompt_mrc.h"
#include "metrics/recency_index.h"
#include "metrics/shards_mrc.h"

using namespace radixkv;
using namespace radixkv::metrics;

namespace {

// Most recent first.
struct RecencyList {
  std::list<uint64_t> order;

  std::optional<uint64_t> position(uint64_t key) const {
    uint64_t i = 0;
    for (const uint64_t k : order) {
      if (k == key) return i;
      ++i;
    }
    return std::nullopt;
  }
  std::optional<uint64_t> touch(uint64_t key) {
    const std::optional<uint64_t> before = position(key);
    if (before) order.remove(key);
    order.push_front(key);
    return before;
  }
};

void check_against_list(uint32_t max_keys, uint64_t universe, int operations, uint64_t seed) {
  CAPTURE(max_keys);
  CAPTURE(universe);
  RecencyIndex index(max_keys);
  RecencyList model;
  std::mt19937_64 rng(seed);
  const std::size_t memory = index.memory_bytes();
  for (int op = 0; op < operations; ++op) {
    CAPTURE(op);
    const uint64_t key = rng() % universe * 0x9E3779B97F4A7C15ull;  // spread over 64 bits
    switch (rng() % 6) {
      case 0:
        REQUIRE(index.erase_least_recent() == !model.order.empty());
        if (!model.order.empty()) model.order.pop_back();
        break;
      case 1:
        REQUIRE(index.more_recent(key) == model.position(key));
        break;
      default:
        if (model.position(key) || model.order.size() < max_keys) {
          REQUIRE(index.more_recent(key) == model.touch(key));
          index.touch(key);
        } else {
          CHECK_THROWS_AS(index.touch(key), std::length_error);  // full: nothing changes
        }
    }
    REQUIRE(index.size() == model.order.size());
    REQUIRE(index.memory_bytes() == memory);
  }
  uint64_t depth = 0;
  for (const uint64_t key : model.order) REQUIRE(index.more_recent(key) == depth++);
}

// The LRU stack itself, naively: a vector, least recent first; O(n) an access.
struct NaiveLruStack {
  std::vector<uint64_t> keys;  // keys.back() is the most recent

  std::optional<uint64_t> distance(uint64_t key) const {
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) return std::nullopt;
    return static_cast<uint64_t>(keys.end() - it - 1);
  }
  void touch(uint64_t key) {
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it != keys.end()) keys.erase(it);
    keys.push_back(key);
  }
};

// Random accesses, half of them to a key a few places down the stack (the reuse a cache sees),
// half anywhere in the universe; touch_evicting on a full index drops the least recent key, as
// the oracle does. The index's distance must equal the oracle's before every access.
void check_against_stack(uint32_t max_keys, uint64_t universe, int accesses, uint64_t seed) {
  CAPTURE(max_keys);
  CAPTURE(universe);
  RecencyIndex index(max_keys);
  NaiveLruStack oracle;
  std::mt19937_64 rng(seed);
  for (int access = 0; access < accesses; ++access) {
    CAPTURE(access);
    uint64_t key = rng() % universe * 0x9E3779B97F4A7C15ull;
    if (!oracle.keys.empty() && rng() % 2 == 0) {
      const uint64_t depth = rng() % std::min<uint64_t>(oracle.keys.size(), 1 + rng() % 512);
      key = oracle.keys[oracle.keys.size() - 1 - depth];
    }
    REQUIRE(index.more_recent(key) == oracle.distance(key));
    if (!oracle.distance(key) && oracle.keys.size() == max_keys) {
      oracle.keys.erase(oracle.keys.begin());
    }
    oracle.touch(key);
    index.touch_evicting(key);
    REQUIRE(index.size() == oracle.keys.size());
    if (rng() % 64 == 0) {  // now and then the least recent leaves on its own
      REQUIRE(index.erase_least_recent());
      oracle.keys.erase(oracle.keys.begin());
    }
  }
  for (const uint64_t key : oracle.keys) REQUIRE(index.more_recent(key) == oracle.distance(key));
}

// LRU over pages as the stack model states it (metrics/shards_mrc.h): a request's pages hit when
// they are among the `capacity` most recent at its start; then they are stacked deepest first, so
// that the root is the most recent.
std::vector<uint64_t> lru_hits(const std::vector<std::vector<uint64_t>>& requests,
                               const std::vector<uint64_t>& capacities) {
  std::list<uint64_t> order;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where;
  std::vector<uint64_t> hits(capacities.size(), 0);
  for (const std::vector<uint64_t>& pages : requests) {
    for (const uint64_t page : pages) {
      const auto it = where.find(page);
      if (it == where.end()) continue;
      const auto depth = static_cast<uint64_t>(std::distance(order.begin(), it->second));
      for (std::size_t i = 0; i < capacities.size(); ++i) hits[i] += depth < capacities[i] ? 1 : 0;
    }
    for (auto page = pages.rbegin(); page != pages.rend(); ++page) {
      const auto it = where.find(*page);
      if (it != where.end()) order.erase(it->second);
      order.push_front(*page);
      where[*page] = order.begin();
    }
  }
  return hits;
}

// Requests as paths of a random tree: each continues a random earlier prefix (a shared system
// prompt, an earlier turn) with fresh pages, so that their page keys have the prefix structure of
// chained hashes.
std::vector<std::vector<uint64_t>> random_prefix_requests(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint64_t>> requests;
  uint64_t next_page = 1;
  for (int i = 0; i < count; ++i) {
    std::vector<uint64_t> pages;
    if (!requests.empty() && rng() % 8 != 0) {
      const std::vector<uint64_t>& base = requests[rng() % requests.size()];
      pages.assign(base.begin(),
                   base.begin() + static_cast<std::ptrdiff_t>(rng() % (base.size() + 1)));
    }
    const uint64_t fresh = rng() % 12;
    for (uint64_t p = 0; p < fresh; ++p) pages.push_back(next_page++ * 0x9E3779B97F4A7C15ull);
    requests.push_back(std::move(pages));
  }
  return requests;
}

}  // namespace

TEST_CASE("recency index: distances equal a recency list's positions") {
  check_against_list(64, 50, 6000, 1);      // never full; many compactions
  check_against_list(16, 40, 6000, 3);      // full most of the time: refusals change nothing
  check_against_list(1, 3, 500, 4);         // one key
  check_against_list(100, 100, 20000, 5);   // full, many compactions of a fixed width
  check_against_list(300, 5000, 20000, 6);  // mostly new keys, the oldest leaving
}

TEST_CASE("recency index: reuse distances equal a naive LRU stack's, access by access") {
  check_against_stack(1, 4, 300, 41);          // one key: every new one replaces it
  check_against_stack(64, 80, 20000, 42);      // one word of slots; full, many compactions
  check_against_stack(700, 900, 40000, 43);    // 22 words: two levels of counts
  check_against_stack(3000, 6000, 40000, 44);  // 94 words: three levels, the window full
  check_against_stack(3000, 2500, 40000, 45);  // never full: compactions of a growing stack
}

TEST_CASE("recency index: allocates its bound once, refuses kNoKey and an empty bound") {
  for (const uint32_t max_keys : {1u, 7u, 16384u}) {
    const RecencyIndex index(max_keys);
    CHECK(index.memory_bytes() == RecencyIndex::memory_bound(max_keys));
  }
  RecencyIndex index(4);
  CHECK_THROWS_AS(index.touch(RecencyIndex::kNoKey), std::invalid_argument);
  CHECK(index.size() == 0);
  CHECK_THROWS_AS(RecencyIndex(0), std::invalid_argument);
}

TEST_CASE("shards at rate 1: hits equal LRU over a page list at every capacity") {
  for (const uint64_t seed : {11u, 12u, 13u}) {
    const std::vector<std::vector<uint64_t>> requests = random_prefix_requests(600, seed);
    ShardsConfig config;
    config.capacities_pages = {1, 3, 10, 40, 150, 600};
    ShardsMrc mrc(config);
    uint64_t accesses = 0;
    for (const std::vector<uint64_t>& pages : requests) {
      mrc.access(pages);
      accesses += pages.size();
    }
    CHECK(mrc.rate() == 1.0);
    CHECK(mrc.page_accesses() == accesses);
    CHECK(mrc.sampled_accesses() == accesses);
    const std::vector<uint64_t> expected = lru_hits(requests, config.capacities_pages);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CAPTURE(config.capacities_pages[i]);
      CHECK(mrc.hit_pages(i) == static_cast<double>(expected[i]));
    }
  }
}

TEST_CASE("shards at rate 1 with a window of the largest capacity: still exact") {
  // Thousands of distinct pages through a window of 600 keys: the least recent leave, and an
  // access of one of them is a miss at every capacity, as it is in the model.
  const std::vector<std::vector<uint64_t>> requests = random_prefix_requests(600, 21);
  ShardsConfig config;
  config.max_keys = 600;
  config.capacities_pages = {2, 20, 200, 600};
  ShardsMrc mrc(config);
  for (const auto& pages : requests) mrc.access(pages);
  CHECK(mrc.rate() == 1.0);
  CHECK(mrc.window_keys() == 600);
  CHECK(mrc.tracked_keys() == 600);
  const std::vector<uint64_t> expected = lru_hits(requests, config.capacities_pages);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(config.capacities_pages[i]);
    CHECK(mrc.hit_pages(i) == static_cast<double>(expected[i]));
  }
}

TEST_CASE("shards sampled: rate = max_keys / largest capacity, a fixed window, fixed memory") {
  const std::vector<std::vector<uint64_t>> requests = random_prefix_requests(3000, 31);
  ShardsConfig config;
  config.max_keys = 64;
  config.capacities_pages = {10, 100, 1000};
  ShardsMrc mrc(config);
  CHECK(mrc.rate() == doctest::Approx(0.064).epsilon(1e-12));
  CHECK(mrc.window_keys() == 64);
  const std::size_t memory = mrc.memory_bytes();
  CHECK(memory == ShardsMrc::memory_bound(64));
  uint64_t sampled = 0;
  for (const auto& pages : requests) {
    mrc.access(pages);
    REQUIRE(mrc.tracked_keys() <= 64);
    REQUIRE(mrc.memory_bytes() == memory);
    for (const uint64_t key : pages) {
      const uint64_t value = (key ^ splitmix64(0)) >> 1;  // the default seed's
      sampled += static_cast<double>(value) < 0.064 * 9223372036854775808.0 ? 1 : 0;
    }
  }
  CHECK(mrc.sampled_accesses() == sampled);
  CHECK(mrc.sampled_accesses() > 0);
  CHECK(mrc.hit_pages(0) <= mrc.hit_pages(1));
  CHECK(mrc.hit_pages(1) <= mrc.hit_pages(2));
  CHECK(mrc.hit_pages(2) <= static_cast<double>(mrc.page_accesses()));
  // A lower rate asked for is kept.
  config.rate = 0.01;
  CHECK(ShardsMrc(config).rate() == doctest::Approx(0.01).epsilon(1e-12));
  CHECK(ShardsMrc(config).window_keys() == 10);
}

TEST_CASE("shards: the default configuration holds at most 1 MiB") {
  ShardsConfig config;
  config.capacities_pages = {1'000'000};  // a window as large as the default allows
  const ShardsMrc mrc(config);
  CHECK(mrc.window_keys() == ShardsConfig::kDefaultMaxKeys);
  CHECK(mrc.memory_bytes() == ShardsMrc::memory_bound(ShardsConfig::kDefaultMaxKeys));
  CHECK(mrc.memory_bytes() <= std::size_t{1} << 20);
}

TEST_CASE("shards: bad configurations are refused, naming the field") {
  ShardsConfig config;
  config.capacities_pages = {4, 8};
  for (const double rate : {0.0, -0.5, 1.5}) {
    config.rate = rate;
    CHECK_THROWS_WITH_AS(ShardsMrc{config}, doctest::Contains("sampling rate"),
                         std::invalid_argument);
  }
  config.rate = 0.5;
  config.max_keys = 0;
  CHECK_THROWS_WITH_AS(ShardsMrc{config}, doctest::Contains("max_keys"), std::invalid_argument);
  config.max_keys = 16;
  for (const std::vector<uint64_t>& capacities :
       {std::vector<uint64_t>{}, std::vector<uint64_t>{0, 4}, std::vector<uint64_t>{8, 8},
        std::vector<uint64_t>{8, 4}, std::vector<uint64_t>(17, 1)}) {
    config.capacities_pages = capacities;
    CHECK_THROWS_WITH_AS(ShardsMrc{config}, doctest::Contains("capacit"), std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(PromptMrc(16, 3), doctest::Contains("at least 4 pages"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PromptMrc(0, 64), doctest::Contains("page size"), std::invalid_argument);
}

TEST_CASE("prompt keys: chained through the namespace and every earlier token") {
  std::vector<TokenId> a(64);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<TokenId>(i);
  std::vector<TokenId> b = a;
  b[3] = 999;  // differs in page 0 only
  std::vector<uint64_t> ka, kb, kc, kd;
  prompt_page_keys(1, a, 16, ka);
  prompt_page_keys(1, b, 16, kb);
  prompt_page_keys(2, a, 16, kc);
  prompt_page_keys(1, std::span<const TokenId>(a).first(47), 16, kd);  // 2 full pages
  REQUIRE(ka.size() == 4);
  REQUIRE(kd.size() == 2);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(ka[i] != kb[i]);  // page i's own tokens are equal for i > 0; its prefix is not
    CHECK(ka[i] != kc[i]);  // another namespace
  }
  CHECK(kd[0] == ka[0]);
  CHECK(kd[1] == ka[1]);
}

TEST_CASE("prompt mrc: the curve's capacities are the multiples, its hit rate counts tokens") {
  PromptMrc mrc(4, 8);
  std::vector<TokenId> prompt(10);  // 2 full pages and 2 tokens never cached
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<TokenId>(i);
  mrc.access(0, prompt);
  mrc.access(0, prompt);  // both pages hit at every capacity >= 2 pages
  const std::vector<MrcPoint> curve = mrc.curve();
  REQUIRE(curve.size() == kMrcMultiples.size());
  const uint64_t pages[] = {2, 4, 8, 16, 32, 64};
  for (std::size_t i = 0; i < curve.size(); ++i) {
    CHECK(curve[i].multiple == kMrcMultiples[i]);
    CHECK(curve[i].capacity_pages == pages[i]);
    CHECK(curve[i].capacity_tokens == pages[i] * 4);
    CHECK(curve[i].hit_rate == doctest::Approx(8.0 / 20.0));
  }
  CHECK(mrc.prompt_tokens() == 20);
}
