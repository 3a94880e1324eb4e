// KV events from the runtime itself: an EventBatcher attached as the tree's tier events
// (TierConfig::events) gives one batch per runtime call that changed the cache, and a consumer of
// the batches holds exactly the tree's pages after every call; over SharedRuntime, one batcher per
// shard, from several threads, into one thread-safe sink (labelled `threads`: TSan runs it).
#include <doctest/doctest.h>

#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "events/block_hash.h"
#include "events/event_batcher.h"
#include "runtime/prefix_cache_runtime.h"
#include "runtime/shared_runtime.h"
#include "tests/event_script.h"

using namespace radixkv;
using radixkv::testing::MediumBlock;

namespace {

constexpr uint32_t kPageTokens = 4;

std::set<MediumBlock> device_pages(const std::vector<PageHash>& hashes) {
  std::set<MediumBlock> out;
  for (const PageHash& h : hashes) out.emplace("GPU", events::block_hash(h));
  return out;
}

// Three system prompts per namespace, then a few tokens over a small alphabet: prompts share
// prefixes, and the small pool makes the runtime evict.
std::vector<TokenId> random_prompt(std::mt19937_64& rng, Namespace ns) {
  std::vector<TokenId> prompt(8 + 8 * (rng() % 3), static_cast<TokenId>(ns * 100 + rng() % 3));
  for (uint64_t i = 0, n = 1 + rng() % 14; i < n; ++i) {
    prompt.push_back(static_cast<TokenId>(rng() % 4));
  }
  return prompt;
}

}  // namespace

TEST_CASE("runtime events: one batch per call, and the batches rebuild the tree after every call") {
  std::vector<events::EventBatch> batches;
  events::EventBatcherOptions options;
  options.page_tokens = kPageTokens;
  events::EventBatcher batcher(options, [&](events::EventBatch&& b) {
    CHECK_FALSE(b.events.empty());  // a call that changed nothing publishes nothing
    batches.push_back(std::move(b));
  });
  PagePool pool(KvLayout{1, 1, 4, 2, kPageTokens}, 48);
  PrefixCacheRuntime runtime(pool, RuntimeConfig{}, TierConfig::with_events(&batcher));

  std::set<MediumBlock> held;
  size_t applied = 0;
  uint64_t calls = 0;
  const auto after_call = [&] {
    ++calls;
    REQUIRE(batches.size() - applied <= 1);  // at most one batch per call
    for (; applied < batches.size(); ++applied) testing::apply_events(held, batches[applied]);
    REQUIRE(held == device_pages(runtime.tree().tier_page_hashes(Tier::kDevice)));
  };
  std::mt19937_64 rng(5);
  std::vector<SeqHandle> live;
  for (int r = 0; r < 600; ++r) {
    const Namespace ns = rng() % 3;
    const std::vector<TokenId> prompt = random_prompt(rng, ns);
    const AdmitResult admitted = runtime.admit({static_cast<uint64_t>(r), ns, prompt});
    after_call();
    if (admitted.ok()) {
      runtime.commit(admitted.seq, static_cast<uint32_t>(prompt.size()));
      after_call();
      live.push_back(admitted.seq);
    }
    while (!live.empty() && (live.size() > 3 || !admitted.ok())) {
      const size_t pick = rng() % live.size();
      if (rng() % 4 == 0) {
        runtime.abort(live[pick]);
      } else {
        runtime.finish(live[pick]);
      }
      after_call();
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
    }
  }
  for (SeqHandle seq : live) {
    runtime.finish(seq);
    after_call();
  }
  CHECK(runtime.stats().evicted_pages > 0);  // removals were part of the stream
  CHECK(batches.size() > calls / 4);
  runtime.clear_cache();
  after_call();
  CHECK(held.empty());
  CHECK(std::holds_alternative<events::AllBlocksCleared>(batches.back().events.back()));
}

TEST_CASE("runtime events: SharedRuntime, a batcher per shard, threads, one shared sink") {
  constexpr uint32_t kShards = 3;
  std::mutex sink_mutex;
  std::vector<events::EventBatch> stream;  // in the order the sink got them, shards interleaved
  std::vector<std::unique_ptr<events::EventBatcher>> batchers;
  std::vector<TierEvents*> observers;
  for (uint32_t i = 0; i < kShards; ++i) {
    events::EventBatcherOptions options;
    options.page_tokens = kPageTokens;
    batchers.push_back(std::make_unique<events::EventBatcher>(options, [&](events::EventBatch&& b) {
      const std::lock_guard lock(sink_mutex);
      stream.push_back(std::move(b));
    }));
    observers.push_back(batchers.back().get());
  }
  SharedRuntime cache(KvLayout{1, 1, 4, 2, kPageTokens}, 180, kShards, RuntimeConfig{}, observers);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      std::mt19937_64 rng(100 + t);
      for (int r = 0; r < 800; ++r) {
        const Namespace ns = rng() % 12;
        const std::vector<TokenId> prompt = random_prompt(rng, ns);
        const SharedAdmit admitted = cache.admit({static_cast<uint64_t>(r), ns, prompt});
        if (!admitted.ok()) continue;
        cache.commit(admitted.handle, static_cast<uint32_t>(prompt.size()));
        if (rng() % 4 == 0) {
          cache.abort(admitted.handle);
        } else {
          cache.finish(admitted.handle);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::set<MediumBlock> held;
  for (const events::EventBatch& batch : stream) testing::apply_events(held, batch);
  CHECK(held == device_pages(cache.tier_page_hashes(Tier::kDevice)));
  CHECK(held.size() == cache.cached_pages());
  CHECK(cache.stats().evicted_pages > 0);
  uint64_t flushed = 0;
  for (const auto& batcher : batchers) flushed += batcher->batches_flushed();
  CHECK(flushed == stream.size());
  for (const auto& batcher : batchers) CHECK(batcher->batches_flushed() > 0);  // every shard spoke

  CHECK_THROWS_WITH_AS(
      SharedRuntime(KvLayout{1, 1, 4, 2, kPageTokens}, 180, kShards, RuntimeConfig{},
                    std::vector<TierEvents*>(2, observers[0])),
      "SharedRuntime: 2 tier event observers for 3 shards (give one per shard, or none)",
      std::invalid_argument);
}
