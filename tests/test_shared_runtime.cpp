// SharedRuntime under contention: several threads admit, commit, decode, finish and abort at once
// over namespaces that land on different shards. Run under ThreadSanitizer in CI
// (RADIXKV_SANITIZE=thread); here it checks that the shards end consistent and leak nothing.
#include <doctest/doctest.h>

#include <atomic>
#include <random>
#include <thread>

#include "runtime/shared_runtime.h"

using namespace radixkv;

namespace {

constexpr int kThreads = 4;
constexpr int kRequestsPerThread = 1500;

void serve(SharedRuntime& cache, uint64_t seed, std::atomic<uint64_t>& double_finishes,
           std::atomic<uint64_t>& double_finish_errors) {
  std::mt19937_64 rng(seed);
  std::vector<TokenId> prompt;
  for (int r = 0; r < kRequestsPerThread; ++r) {
    const Namespace ns = rng() % 6;
    // Three system prompts per namespace, then a short user message over a small alphabet.
    prompt.assign(24 + 8 * (rng() % 3), static_cast<TokenId>(ns * 100 + rng() % 3));
    for (uint64_t i = 0, n = 1 + rng() % 20; i < n; ++i)
      prompt.push_back(static_cast<TokenId>(rng() % 4));
    const SharedAdmit admitted =
        cache.admit({static_cast<uint64_t>(r), ns, prompt, kDefaultPriority});
    if (!admitted.ok()) continue;
    REQUIRE(admitted.position_offset == admitted.reused_tokens);
    REQUIRE(admitted.block_table.size() == (prompt.size() + 3) / 4);
    // Chunked prefill in two steps, then a few decode tokens.
    const auto length = static_cast<uint32_t>(prompt.size());
    cache.commit(admitted.handle, admitted.reused_tokens + (length - admitted.reused_tokens) / 2);
    cache.commit(admitted.handle, length);
    bool alive = true;
    for (uint64_t t = 0, n = rng() % 9; t < n && alive; ++t) {
      if (!cache.append_token(admitted.handle, static_cast<TokenId>(rng() % 4)).ok()) {
        cache.abort(admitted.handle);
        alive = false;
      }
    }
    if (!alive) continue;
    if (rng() % 5 == 0) {
      cache.abort(admitted.handle);
    } else {
      cache.finish(admitted.handle);
    }
    if (rng() % 50 == 0) {
      ++double_finishes;
      try {
        cache.finish(admitted.handle);
      } catch (const std::logic_error&) {
        ++double_finish_errors;
      }
    }
  }
}

}  // namespace

TEST_CASE("SharedRuntime: threads sharing one cache leave it consistent, locked or sharded") {
  for (uint32_t shards : {1u, 3u}) {
    CAPTURE(shards);
    SharedRuntime cache(KvLayout{1, 1, 4, 2, 4}, 240, shards, RuntimeConfig{});
    std::atomic<uint64_t> double_finishes{0}, double_finish_errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back(serve, std::ref(cache), 1000 + t, std::ref(double_finishes),
                           std::ref(double_finish_errors));
    }
    for (auto& thread : threads) thread.join();
    CHECK(cache.check() == 0);  // no sequence is live: nothing is private
    const RuntimeStats stats = cache.stats();
    CHECK(stats.admits == stats.finishes + stats.aborts);
    CHECK(stats.admits > kThreads * kRequestsPerThread / 2);
    CHECK(stats.reused_tokens > 0);
    CHECK(cache.cached_pages() > 0);
    // Every second finish was refused with an error, none slipped through.
    CHECK(double_finishes.load() > 0);
    CHECK(double_finish_errors.load() == double_finishes.load());
  }
}

TEST_CASE("SharedRuntime: bad configuration and foreign handles are refused") {
  CHECK_THROWS_AS(SharedRuntime(KvLayout{}, 16, 0), std::invalid_argument);
  CHECK_THROWS_WITH_AS(SharedRuntime(KvLayout{}, 2, 4), doctest::Contains("each of 4 shards"),
                       std::invalid_argument);
  SharedRuntime cache(KvLayout{}, 16, 2);
  CHECK_THROWS_AS(cache.finish(SharedHandle{7, {}}), std::logic_error);
  CHECK_THROWS_AS(cache.finish(SharedHandle{0, {}}), std::logic_error);
  CHECK(cache.check() == 0);
}

TEST_CASE("SharedRuntime: the cache budget is split in proportion to each shard's pages") {
  // 10 pages over 3 shards: 4, 3, 3. A budget of the whole pool (64-byte pages) with watermarks
  // at 1 lets every shard cache its whole pool: 4 pages in the first shard, not a third of 10.
  const KvLayout layout{1, 1, 4, 2, 4};
  REQUIRE(layout.bytes_per_page() == 64);
  SharedRuntime cache(layout, 10, 3, RuntimeConfig{640, 1.0, 1.0, "lru"});
  Namespace ns = 0;
  while (cache.shard_of(ns) != 0) ++ns;
  std::vector<TokenId> prompt(16);
  for (TokenId i = 0; i < 16; ++i) prompt[static_cast<std::size_t>(i)] = i;
  const SharedAdmit admitted = cache.admit({1, ns, prompt, kDefaultPriority});
  REQUIRE(admitted.ok());
  cache.commit(admitted.handle, 16);
  cache.finish(admitted.handle);
  CHECK(cache.cached_pages() == 4);
  CHECK(cache.check() == 0);

  // A nonzero budget too small to split is refused, not read as "the whole pool" (0).
  CHECK_THROWS_WITH_AS(SharedRuntime(layout, 16, 4, RuntimeConfig{3, 1.0, 1.0, "lru"}),
                       doctest::Contains("leaves shard 0 nothing"), std::invalid_argument);
}

TEST_CASE("SharedRuntime: shards split the pool and the budget exactly, remainders included") {
  // Pages: capacity / shards each, and the first capacity % shards shards one more. Budget:
  // cache_bytes * pages / capacity, rounded down (1000 bytes over 10 pages: 100 a page).
  struct Case {
    uint32_t capacity, shards;
    uint64_t cache_bytes;
    std::vector<uint32_t> pages;
    std::vector<uint64_t> bytes;
  };
  const std::vector<Case> cases = {
      {10, 3, 1000, {4, 3, 3}, {400, 300, 300}},
      {10, 3, 1005, {4, 3, 3}, {402, 301, 301}},  // 1005 * 4 / 10 = 402, * 3 / 10 = 301.5
      {11, 3, 1001, {4, 4, 3}, {364, 364, 273}},  // 1001 * 4 / 11 = 364, * 3 / 11 = 273
      {13, 4, 0, {4, 3, 3, 3}, {0, 0, 0, 0}},     // 0: each shard's whole pool
      {7, 7, 7000, {1, 1, 1, 1, 1, 1, 1}, {1000, 1000, 1000, 1000, 1000, 1000, 1000}},
      {9, 1, 900, {9}, {900}},
  };
  const KvLayout layout{1, 1, 4, 2, 4};  // 64-byte pages
  for (const Case& c : cases) {
    CAPTURE(c.capacity);
    CAPTURE(c.shards);
    SharedRuntime cache(layout, c.capacity, c.shards,
                        RuntimeConfig{c.cache_bytes, 1.0, 1.0, "lru"});
    std::vector<uint32_t> pages;
    std::vector<uint64_t> bytes;
    for (uint32_t i = 0; i < c.shards; ++i) {
      pages.push_back(cache.shard_size(i).pages);
      bytes.push_back(cache.shard_size(i).cache_bytes);
    }
    CHECK(pages == c.pages);
    CHECK(bytes == c.bytes);
  }
  CHECK_THROWS_WITH_AS(SharedRuntime(layout, 10, 3).shard_size(3),
                       doctest::Contains("shard 3 of 3"), std::out_of_range);
}
