// The runtime as the one front door to the tree (runtime/prefix_cache_runtime.h): observers that
// compose, AdmitMode::kCacheOnly (what cache mode models), and the calls without sequences that the
// SGLang facade makes. Each case states the rule it checks against an independent expectation.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "events/block_hash.h"
#include "events/event_batcher.h"
#include "remote/remote_tier.h"
#include "runtime/prefix_cache_runtime.h"
#include "tests/event_script.h"
#include "tests/memory_store.h"
#include "tools/replay/cache_replay.h"
#include "tools/trace/trace_generator.h"

using namespace radixkv;
using radixkv::testing::MediumBlock;
using radixkv::testing::MemoryStore;

namespace {

constexpr uint32_t P = 4;
const KvLayout kLayout{1, 1, 4, 2, P};

std::vector<TokenId> run_of(TokenId first, std::size_t n) {
  std::vector<TokenId> tokens(n);
  for (std::size_t i = 0; i < n; ++i) tokens[i] = first + static_cast<TokenId>(i);
  return tokens;
}

std::set<MediumBlock> device_pages(const PrefixCacheRuntime& runtime) {
  std::set<MediumBlock> out;
  for (const PageHash& h : runtime.tree().tier_page_hashes(Tier::kDevice)) {
    out.emplace("GPU", events::block_hash(h));
  }
  return out;
}

// A KV event consumer: applies every batch its batcher makes.
struct Consumer {
  explicit Consumer(uint32_t page_tokens = P)
      : batcher(options(page_tokens), [this](events::EventBatch&& b) { apply(b); }) {}
  static events::EventBatcherOptions options(uint32_t page_tokens) {
    events::EventBatcherOptions o;
    o.page_tokens = page_tokens;
    return o;
  }
  void apply(const events::EventBatch& batch) {
    testing::apply_events(held, batch);
    ++batches;
  }
  events::EventBatcher batcher;
  std::set<MediumBlock> held;
  uint64_t batches = 0;
};

// Requests that share prefixes through a pool small enough to evict: `pool_pages` device pages,
// cache only (each request's whole pages cached at once), the rest as a trace would.
struct Workload {
  uint32_t requests = 400;
  uint64_t seed = 11;
};

struct RunCounts {
  uint64_t hit_tokens = 0, remote_hit_tokens = 0, evicted = 0;
};

RunCounts run_cache_only(PrefixCacheRuntime& runtime, const Workload& w,
                         const std::function<void()>& after_call = {}) {
  std::mt19937_64 rng(w.seed);
  RunCounts counts;
  for (uint32_t r = 0; r < w.requests; ++r) {
    std::vector<TokenId> prompt = run_of(static_cast<TokenId>(1000 * (rng() % 6)), 4 * P);
    for (uint64_t i = 0, n = rng() % (3 * P); i < n; ++i) {
      prompt.push_back(static_cast<TokenId>(rng() % 3));
    }
    const AdmitResult a =
        runtime.admit({.id = r, .name_space = 0, .prompt = prompt, .mode = AdmitMode::kCacheOnly});
    REQUIRE(a.ok());
    runtime.mark_computed(a.seq, static_cast<uint32_t>(a.block_table.size()) * P);
    runtime.finish(a.seq);
    counts.hit_tokens += a.reused_tokens;
    counts.remote_hit_tokens += a.remote_hit_tokens;
    if (after_call) after_call();
  }
  counts.evicted = runtime.stats().evicted_pages;
  return counts;
}

}  // namespace

TEST_CASE("front door: two observers of one runtime each hold the tree after every call") {
  // Before stage three a tree had one observer: a second one replaced the first.
  Consumer first, second;
  PagePool pool(kLayout, 24);
  TierConfig tiers;
  tiers.events = {&first.batcher, &second.batcher};
  PrefixCacheRuntime runtime(pool, {}, tiers);
  uint64_t calls = 0;
  const RunCounts counts = run_cache_only(runtime, {}, [&] {
    ++calls;
    REQUIRE(first.held == device_pages(runtime));
    REQUIRE(second.held == first.held);
  });
  CHECK(counts.evicted > 0);
  CHECK(first.batches == second.batches);
  CHECK(first.batches > calls / 2);
  PagePool other(kLayout, 4);
  TierConfig with_null;
  with_null.events = {&first.batcher, nullptr};
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(other, {}, with_null),
                       doctest::Contains("null tier observer"), std::invalid_argument);
}

TEST_CASE("front door: a remote tier with an event observer stores and hits as without one") {
  // The bug issue 28 opened with: with KV events on, the remote tier was no longer told what the
  // tree dropped, so it stored nothing and hit nothing.
  const auto run = [](bool with_events) {
    MemoryStore::Shared shared;
    remote::RemoteTier tier(std::make_unique<MemoryStore>(shared),
                            std::make_unique<MemoryStore>(shared),
                            remote::RemoteTierConfig{"t", kLayout, "m", 0, 1u << 12, 64});
    Consumer consumer;
    PagePool pool(kLayout, 24);
    TierConfig tiers;
    tiers.remote = &tier;
    if (with_events) tiers.events = {&consumer.batcher};
    PrefixCacheRuntime runtime(pool, {}, tiers);
    // The writer thread is drained after every request, so that what a load finds does not
    // depend on how fast that thread runs.
    const RunCounts counts = run_cache_only(runtime, {}, [&] { tier.drain(); });
    if (with_events) CHECK(consumer.held == device_pages(runtime));
    return std::pair{counts, tier.stats().stored_pages};
  };
  const auto [plain, plain_stored] = run(false);
  const auto [observed, observed_stored] = run(true);
  CHECK(plain_stored > 0);
  CHECK(plain.remote_hit_tokens > 0);
  CHECK(observed_stored == plain_stored);
  CHECK(observed.remote_hit_tokens == plain.remote_hit_tokens);
  CHECK(observed.hit_tokens == plain.hit_tokens);
}

TEST_CASE("front door: a remote hit leaves the local tiers as computing those pages would") {
  // A remote load caches its pages at admit without recording an access; the request's finish
  // records one, as a request that computed them does. Before, policies that count accesses kept
  // other pages with a remote tier than without one (a remote hit was one access more: lfu and
  // sieve failed here). Not slru, gdsf and reuse: they rank or learn by entries, and the remote
  // run's pages are a node of their own, the computed ones below it another, where computing them
  // all makes one node (tests/test_combinations.cpp, kExpectedFailures).
  for (const std::string policy : {"lru", "fifo", "lfu", "sieve", "priority"}) {
    CAPTURE(policy);
    const auto run = [&](bool with_remote) {
      MemoryStore::Shared shared;
      remote::RemoteTier tier(std::make_unique<MemoryStore>(shared),
                              std::make_unique<MemoryStore>(shared),
                              remote::RemoteTierConfig{"t", kLayout, "m", 0, 1u << 12, 64});
      Consumer consumer;  // page hashes on in both runs, for device_pages()
      PagePool pool(kLayout, 24);
      TierConfig tiers;
      tiers.events = {&consumer.batcher};
      if (with_remote) tiers.remote = &tier;
      RuntimeConfig config;
      config.policy = policy;
      PrefixCacheRuntime runtime(pool, config, tiers);
      const RunCounts counts = run_cache_only(runtime, {.requests = 600, .seed = 5}, [&] {
        if (with_remote) tier.drain();
      });
      return std::tuple{counts, runtime.stats().evicted_pages, device_pages(runtime)};
    };
    const auto [alone, alone_evicted, alone_pages] = run(false);
    const auto [with, with_evicted, with_pages] = run(true);
    REQUIRE(with.remote_hit_tokens > 0);
    CHECK(with.hit_tokens - with.remote_hit_tokens == alone.hit_tokens);
    CHECK(with_evicted == alone_evicted);
    CHECK(with_pages == alone_pages);
  }
}

TEST_CASE("front door: cache only matches every whole page and caches what the pool can hold") {
  PagePool pool(kLayout, 6);
  PrefixCacheRuntime runtime(pool, RuntimeConfig{.high_watermark = 1.0, .low_watermark = 1.0});
  const std::vector<TokenId> prompt = run_of(1, 2 * P);  // exactly two pages
  SUBCASE("an engine's admit leaves the last page to compute; cache only takes it") {
    AdmitResult a = runtime.admit({.id = 1, .prompt = prompt, .mode = AdmitMode::kCacheOnly});
    REQUIRE(a.ok());
    CHECK(a.block_table.size() == 2);
    runtime.mark_computed(a.seq, 2 * P);
    runtime.finish(a.seq);
    a = runtime.admit({.id = 2, .prompt = prompt});
    CHECK(a.reused_tokens == P);  // reuse_cut: (8 - 1) / 4 * 4
    runtime.abort(a.seq);
    a = runtime.admit({.id = 3, .prompt = prompt, .mode = AdmitMode::kCacheOnly});
    CHECK(a.reused_tokens == 2 * P);
    CHECK(a.block_table.size() == 2);  // no page for a partial tail
    CHECK_THROWS_WITH_AS(runtime.append_token(a.seq, 7), doctest::Contains("cache only"),
                         std::logic_error);
    runtime.finish(a.seq);
  }
  SUBCASE("a partial last page is neither matched nor given a page") {
    std::vector<TokenId> longer = prompt;
    longer.push_back(99);
    const AdmitResult a = runtime.admit({.id = 1, .prompt = longer, .mode = AdmitMode::kCacheOnly});
    CHECK(a.block_table.size() == 2);
    CHECK(a.uncached_pages == 0);
    runtime.abort(a.seq);
  }
  SUBCASE("short of pages: as many as the pool gives, the rest counted, never kNoSpace") {
    // An engine sequence holds 4 of the 6 pages, so a 5-page prompt gets 2.
    const AdmitResult holder = runtime.admit({.id = 9, .prompt = run_of(500, 4 * P)});
    REQUIRE(holder.ok());
    // A cache-only sequence reads its prompt in place: it lives until the sequence ends.
    const std::vector<TokenId> five = run_of(1, 5 * P);
    const AdmitResult a = runtime.admit({.id = 1, .prompt = five, .mode = AdmitMode::kCacheOnly});
    REQUIRE(a.ok());
    CHECK(a.block_table.size() == 2);
    CHECK(a.uncached_pages == 3);
    CHECK(runtime.stats().uncached_pages == 3);
    // An engine's admit of the same is all or nothing.
    const AdmitResult engine = runtime.admit({.id = 2, .prompt = run_of(1, 5 * P)});
    CHECK(engine.status == RuntimeStatus::kNoSpace);
    runtime.mark_computed(a.seq, 2 * P);
    runtime.finish(a.seq);
    runtime.abort(holder.seq);
    CHECK(runtime.cached_pages() == 2);
    CHECK(runtime.check_accounting() == 0);
  }
  SUBCASE("a prompt longer than the pool is cut, not refused as too large") {
    const std::vector<TokenId> nine = run_of(1, 9 * P);
    const AdmitResult a = runtime.admit({.id = 1, .prompt = nine, .mode = AdmitMode::kCacheOnly});
    REQUIRE(a.ok());
    CHECK(a.block_table.size() == 6);
    CHECK(a.uncached_pages == 3);
    runtime.abort(a.seq);
  }
}

TEST_CASE("front door: calls without sequences go through the runtime's observers and budget") {
  Consumer consumer;
  PagePool pool(kLayout, 16);
  // Watermarks 12 / 8 pages of 16.
  PrefixCacheRuntime runtime(pool, RuntimeConfig{.high_watermark = 0.75, .low_watermark = 0.5},
                             TierConfig::with_events(&consumer.batcher));
  const auto insert = [&](TokenId first, uint32_t pages) {
    std::vector<PageId> held;
    REQUIRE(pool.allocate(pages, held));
    const InsertResult r = runtime.insert(0, run_of(first, size_t{pages} * P), held);
    pool.release(held);  // the tree keeps its own reference
    return r;
  };
  CHECK(insert(0, 4).new_pages == 4);
  CHECK(insert(100, 4).new_pages == 4);
  CHECK(consumer.held == device_pages(runtime));
  // Lock the first prefix; the second one stays evictable.
  std::vector<PageId> matched;
  const MatchResult m = runtime.match(0, run_of(0, 4 * P), &matched);
  CHECK(m.tokens == 4 * P);
  CHECK(matched.size() == 4);
  runtime.lock(m.node);
  CHECK(runtime.tree().protected_pages() == 4);
  // Above the high watermark (12) an insert evicts down to the low one (8), never the lock.
  CHECK(insert(200, 5).new_pages == 5);
  CHECK(runtime.cached_pages() == 8);
  CHECK(runtime.cached_prefix(0, run_of(0, 4 * P + 1)) == 4 * P);
  CHECK(runtime.tree().peek(0, run_of(100, 4 * P)) == 0);      // the least recent, all gone
  CHECK(runtime.tree().peek(0, run_of(200, 5 * P)) == 4 * P);  // then one tail page
  CHECK(consumer.held == device_pages(runtime));
  // Unlocked, the first prefix is the least recent leaf: evict() takes its pages tail first and
  // names them in that order.
  runtime.unlock(m.node);
  std::vector<PageId> evicted;
  CHECK(runtime.evict(3, &evicted) == 3);
  CHECK(evicted == std::vector<PageId>{matched[3], matched[2], matched[1]});
  CHECK(runtime.tree().peek(0, run_of(0, 4 * P)) == P);
  CHECK(consumer.held == device_pages(runtime));
  CHECK(runtime.check_accounting() == 0);
}

TEST_CASE("front door: the cache-mode replay with a remote tier and KV events stores as without") {
  // Issue 28's first report: `radixkv replay --remote ... --kv-events ...` stored nothing in the
  // store, because the replay's second observer replaced the remote tier.
  tools::GenConfig gen;
  gen.conversations = 60;
  const tools::Trace trace = tools::generate_trace(gen, "front door");
  const auto run = [&](bool with_events) {
    MemoryStore::Shared shared;
    const KvLayout layout = KvLayout::preset("llama-3-8b", 16);
    remote::RemoteTier tier(std::make_unique<MemoryStore>(shared),
                            std::make_unique<MemoryStore>(shared),
                            remote::RemoteTierConfig{"t", layout, "m", 0, 1u << 16, 64});
    Consumer consumer(layout.page_tokens);
    tools::CacheReplayConfig config;
    config.layout = layout;
    config.capacity_pages = 400;  // far below the trace's pages: it evicts
    config.remote = &tier;
    if (with_events) config.events = &consumer.batcher;
    config.before_request = [&](std::size_t) { tier.drain(); };  // as in the test above
    const tools::ReplayResult r = tools::replay_cache(trace, config);
    CHECK(r.ok());
    CHECK(r.pages_leaked == 0);
    if (with_events) CHECK(consumer.batches > 0);
    return r;
  };
  const tools::ReplayResult plain = run(false);
  const tools::ReplayResult observed = run(true);
  CHECK(plain.evicted_pages > 0);
  CHECK(plain.remote.stored_pages > 0);
  CHECK(plain.remote.hit_tokens > 0);
  CHECK(observed.remote.stored_pages == plain.remote.stored_pages);
  CHECK(observed.remote.hit_tokens == plain.remote.hit_tokens);
  CHECK(observed.hit_tokens == plain.hit_tokens);
}
