// SharedRuntime under contention: several threads admit, commit, decode, finish and abort at once
// over namespaces that land on different shards, over one pool (with host memory, so pages' bytes
// are written and read back). Run under ThreadSanitizer in CI (RADIXKV_SANITIZE=thread); here it
// checks that the shards end consistent, leak nothing and hand out each page id once.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <span>
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

namespace {

// What a page of KV holds in the tests below: a function of the namespace and the tokens up to
// the page's end, as real KV is a function of its prefix. A page cached for a prefix holds the
// same bytes whoever computed it, so a reader can check every page it reuses.
std::byte page_byte(Namespace ns, std::span<const TokenId> prefix, std::size_t i) {
  uint64_t h = 0x9E3779B97F4A7C15ull * (ns + 1);
  for (TokenId t : prefix) h = (h ^ static_cast<uint32_t>(t)) * 0x100000001B3ull;
  return static_cast<std::byte>((h >> 24) + i * 131);
}

constexpr uint32_t kPageTokens = 4;
const KvLayout kBytesLayout{1, 1, 4, 2, kPageTokens};  // 64-byte pages

struct PageUse {
  std::map<PageId, uint32_t> shard_of_page;  // every page id seen, and the shard that gave it
  uint64_t checked_pages = 0;                // reused pages whose bytes were read back
  uint64_t problems = 0;                     // bytes that differ, pages seen in two shards
};

// Requests as an engine serves them: admit under the shard's lock; then, outside it, read the
// reused pages and write the computed ones through the pool's host memory; then commit and
// finish.
void serve_with_bytes(SharedRuntime& cache, PagePool& pool, uint64_t seed, PageUse& use) {
  std::mt19937_64 rng(seed);
  std::vector<TokenId> prompt;
  for (int r = 0; r < 600; ++r) {
    const Namespace ns = rng() % 12;
    prompt.assign(16 + 4 * (rng() % 3), static_cast<TokenId>(ns * 100 + rng() % 2));
    for (uint64_t i = 0, n = 1 + rng() % 12; i < n; ++i) {
      prompt.push_back(static_cast<TokenId>(rng() % 3));
    }
    const SharedAdmit admitted = cache.admit({static_cast<uint64_t>(r), ns, prompt});
    if (!admitted.ok()) continue;
    const std::span<const TokenId> tokens(prompt);
    for (std::size_t i = 0; i < admitted.block_table.size(); ++i) {
      const PageId page = admitted.block_table[i];
      use.shard_of_page.emplace(page, admitted.handle.shard);
      if (use.shard_of_page[page] != admitted.handle.shard) ++use.problems;
      const std::span<std::byte> bytes = pool.host_bytes(page);
      const auto prefix = tokens.first(std::min(tokens.size(), (i + 1) * kPageTokens));
      if (i < admitted.reused_tokens / kPageTokens) {
        for (std::size_t b = 0; b < bytes.size(); ++b) {
          if (bytes[b] != page_byte(ns, prefix, b)) ++use.problems;
        }
        ++use.checked_pages;
      } else {
        for (std::size_t b = 0; b < bytes.size(); ++b) bytes[b] = page_byte(ns, prefix, b);
      }
    }
    cache.commit(admitted.handle, static_cast<uint32_t>(prompt.size()));
    if (rng() % 4 == 0) {
      cache.abort(admitted.handle);
    } else {
      cache.finish(admitted.handle);
    }
  }
}

}  // namespace

TEST_CASE("SharedRuntime over one host pool: threads read back every reused page's bytes") {
  // Label `threads`: under TSan this checks that the shards' page allocation, over partitions of
  // one pool, and the engine's reads and writes of page bytes outside the locks do not race.
  for (uint32_t shards : {1u, 3u}) {
    CAPTURE(shards);
    PagePool pool(kBytesLayout, 150, make_host_backend());
    std::vector<PageUse> uses(kThreads);
    {
      SharedRuntime cache(pool, shards);
      CHECK(pool.free_pages() == 0);  // every page lent to the shards
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back(serve_with_bytes, std::ref(cache), std::ref(pool), 77 + t,
                             std::ref(uses[static_cast<std::size_t>(t)]));
      }
      for (auto& thread : threads) thread.join();
      CHECK(cache.check() == 0);
      CHECK(cache.stats().reused_tokens > 0);
    }
    CHECK(pool.free_pages() == 150);  // the shards gave the pool back

    // Page ids are the pool's, and each belongs to one shard only.
    std::map<PageId, uint32_t> shard_of_page;
    uint64_t checked = 0;
    for (const PageUse& use : uses) {
      CHECK(use.problems == 0);
      checked += use.checked_pages;
      for (const auto& [page, shard] : use.shard_of_page) {
        CHECK(page < 150);
        CHECK(shard_of_page.emplace(page, shard).first->second == shard);
      }
    }
    CHECK(checked > 100);
    std::set<uint32_t> shards_seen;
    for (const auto& [page, shard] : shard_of_page) shards_seen.insert(shard);
    CHECK(shards_seen.size() == shards);
  }
}

TEST_CASE("SharedRuntime over a caller's pool: shards split its ids exactly, remainders first") {
  // 10 pages over 3 shards: ids [0, 4), [4, 7), [7, 10). Each shard caches up to its own pages.
  PagePool pool(kBytesLayout, 10);
  SharedRuntime cache(pool, 3, RuntimeConfig{0, 1.0, 1.0, "lru"});
  const std::vector<std::pair<PageId, PageId>> ranges = {{0, 4}, {4, 7}, {7, 10}};
  for (uint32_t shard = 0; shard < 3; ++shard) {
    Namespace ns = 0;
    while (cache.shard_of(ns) != shard) ++ns;
    const std::vector<TokenId> prompt(4 * 4 + 1, static_cast<TokenId>(ns));  // 5 pages
    const SharedAdmit refused = cache.admit({1, ns, prompt});
    CHECK(refused.status == RuntimeStatus::kTooLarge);                    // no shard holds 5 pages
    const std::vector<TokenId> fits(prompt.begin(), prompt.begin() + 9);  // 3 pages
    const SharedAdmit admitted = cache.admit({2, ns, fits});
    REQUIRE(admitted.ok());
    for (PageId page : admitted.block_table) {
      CHECK(page >= ranges[shard].first);
      CHECK(page < ranges[shard].second);
    }
    cache.finish(admitted.handle);
  }
  CHECK(cache.check() == 0);

  // The pool serves the SharedRuntime: no runtime of its own, no second SharedRuntime.
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime{pool}, doctest::Contains("lent to partitions"),
                       std::logic_error);
  CHECK_THROWS_WITH_AS(SharedRuntime(pool, 2), doctest::Contains("not yet lent"),
                       std::invalid_argument);
  PagePool claimed(kBytesLayout, 8);
  const PrefixCacheRuntime runtime(claimed);
  CHECK_THROWS_WITH_AS(SharedRuntime(claimed, 2), doctest::Contains("a runtime uses"),
                       std::logic_error);
}

namespace {

// One request's life through either front: admit, prefill in two chunks, a few decode tokens,
// finish (or abort). `Front` is SharedRuntime (handles SharedHandle) or PrefixCacheRuntime.
template <typename Admit, typename Commit, typename Append, typename End>
void serve_one(std::mt19937_64& rng, const std::vector<TokenId>& prompt, Admit admit, Commit commit,
               Append append, End end) {
  const auto [ok, reused] = admit();
  if (!ok) return;
  const auto length = static_cast<uint32_t>(prompt.size());
  commit(reused + (length - reused) / 2);
  commit(length);
  for (uint64_t t = 0, n = rng() % 6; t < n; ++t) {
    if (!append(static_cast<TokenId>(rng() % 4))) return end(false);
  }
  end(rng() % 5 != 0);
}

// A stream of requests over 5 namespaces: shared system prompts, short messages over a small
// alphabet (so that partial pages match), some long enough to evict.
struct RequestStream {
  explicit RequestStream(uint64_t seed) : rng(seed) {}
  std::pair<Namespace, std::vector<TokenId>> next() {
    const Namespace ns = rng() % 5;
    std::vector<TokenId> prompt(12 + 4 * (rng() % 3), static_cast<TokenId>(ns * 100 + rng() % 2));
    for (uint64_t i = 0, n = 1 + rng() % (rng() % 8 == 0 ? 40 : 10); i < n; ++i) {
      prompt.push_back(static_cast<TokenId>(rng() % 3));
    }
    return {ns, prompt};
  }
  std::mt19937_64 rng;
};

}  // namespace

// SharedRuntime::stats() is every field of its shards' stats summed. The oracle: one
// PrefixCacheRuntime per shard, over a pool of the shard's pages with its budget, serving exactly
// the requests whose namespace lands on that shard, in the same order; their stats, summed field
// by field, must be the shared runtime's. Partial reuse on, so that partial hits count too.
TEST_CASE("SharedRuntime: stats() sums every field of the shards, against separate runtimes") {
  const KvLayout layout{1, 1, 4, 2, 4};  // 4-token pages of 64 bytes
  for (uint32_t shards : {1u, 3u}) {
    CAPTURE(shards);
    const RuntimeConfig config{40 * 64, 0.9, 0.7, "lru", true};
    SharedRuntime shared(layout, 48, shards, config);
    std::vector<std::unique_ptr<PagePool>> pools;
    std::vector<std::unique_ptr<PrefixCacheRuntime>> alone;
    for (uint32_t i = 0; i < shards; ++i) {
      pools.push_back(std::make_unique<PagePool>(layout, shared.shard_size(i).pages));
      RuntimeConfig own = config;
      own.cache_bytes = shared.shard_size(i).cache_bytes;
      alone.push_back(std::make_unique<PrefixCacheRuntime>(*pools.back(), own));
    }
    RequestStream stream(11);
    for (uint64_t r = 0; r < 600; ++r) {
      const auto [ns, prompt] = stream.next();
      const uint64_t seed = stream.rng();
      std::mt19937_64 a(seed), b(seed);  // both fronts take the same decode and end choices
      SharedHandle handle;
      serve_one(
          a, prompt,
          [&] {
            const SharedAdmit got = shared.admit({r, ns, prompt, kDefaultPriority});
            handle = got.handle;
            return std::pair(got.ok(), got.reused_tokens);
          },
          [&](uint32_t n) { shared.commit(handle, n); },
          [&](TokenId t) { return shared.append_token(handle, t).ok(); },
          [&](bool finish) { finish ? (void)shared.finish(handle) : shared.abort(handle); });
      PrefixCacheRuntime& own = *alone[shared.shard_of(ns)];
      SeqHandle seq;
      serve_one(
          b, prompt,
          [&] {
            const AdmitResult got = own.admit({r, ns, prompt, kDefaultPriority});
            seq = got.seq;
            return std::pair(got.ok(), got.reused_tokens);
          },
          [&](uint32_t n) { own.commit(seq, n); },
          [&](TokenId t) { return own.append_token(seq, t).ok(); },
          [&](bool finish) { finish ? (void)own.finish(seq) : own.abort(seq); });
    }
    RuntimeStats sum;
    for (const auto& runtime : alone) {
      const RuntimeStats& s = runtime->stats();
      sum.admits += s.admits;
      sum.admit_no_space += s.admit_no_space;
      sum.admit_too_large += s.admit_too_large;
      sum.extend_no_space += s.extend_no_space;
      sum.finishes += s.finishes;
      sum.aborts += s.aborts;
      sum.prompt_tokens += s.prompt_tokens;
      sum.reused_tokens += s.reused_tokens;
      sum.device_hit_tokens += s.device_hit_tokens;
      sum.host_hit_tokens += s.host_hit_tokens;
      sum.remote_hit_tokens += s.remote_hit_tokens;
      sum.prefill_tokens += s.prefill_tokens;
      sum.decode_tokens += s.decode_tokens;
      sum.committed_pages += s.committed_pages;
      sum.duplicate_pages += s.duplicate_pages;
      sum.evicted_pages += s.evicted_pages;
      sum.uncached_pages += s.uncached_pages;
      sum.peak_cached_pages += s.peak_cached_pages;
      sum.remote_no_staging += s.remote_no_staging;
      sum.partial_hit_tokens += s.partial_hit_tokens;
    }
    const RuntimeStats got = shared.stats();
    CHECK(got.admits == sum.admits);
    CHECK(got.admit_no_space == sum.admit_no_space);
    CHECK(got.admit_too_large == sum.admit_too_large);
    CHECK(got.extend_no_space == sum.extend_no_space);
    CHECK(got.finishes == sum.finishes);
    CHECK(got.aborts == sum.aborts);
    CHECK(got.prompt_tokens == sum.prompt_tokens);
    CHECK(got.reused_tokens == sum.reused_tokens);
    CHECK(got.device_hit_tokens == sum.device_hit_tokens);
    CHECK(got.host_hit_tokens == sum.host_hit_tokens);
    CHECK(got.remote_hit_tokens == sum.remote_hit_tokens);
    CHECK(got.prefill_tokens == sum.prefill_tokens);
    CHECK(got.decode_tokens == sum.decode_tokens);
    CHECK(got.committed_pages == sum.committed_pages);
    CHECK(got.duplicate_pages == sum.duplicate_pages);
    CHECK(got.evicted_pages == sum.evicted_pages);
    CHECK(got.uncached_pages == sum.uncached_pages);
    CHECK(got.peak_cached_pages == sum.peak_cached_pages);
    CHECK(got.remote_no_staging == sum.remote_no_staging);
    CHECK(got.partial_hit_tokens == sum.partial_hit_tokens);
    // What the sums are over: hits of each kind, evictions, and the metrics agree.
    CHECK(got.device_hit_tokens > 0);
    CHECK(got.partial_hit_tokens > 0);
    CHECK(got.evicted_pages > 0);
    // One tier: every hit is a whole device page or part of one.
    CHECK(got.device_hit_tokens + got.partial_hit_tokens == got.reused_tokens);
    const RuntimeMetrics m = shared.metrics();
    CHECK(m.prompt_tokens == got.prompt_tokens);
    CHECK(m.evicted_pages == got.evicted_pages);
    CHECK(shared.check() == 0);
  }
}
