// Removal reasons in the KV events (radix/tier_events.h, RemovalReason; events/kv_event.h): each
// cause names its own, on the blocks it removed: watermark eviction "evicted", write-back
// demotion to the host tier "demoted", a load back under write-back "promoted" (the host copies),
// a leaf the engine erases "cleared"; clear_cache() sends AllBlocksCleared.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "events/event_batcher.h"
#include "radix/radix_tree.h"
#include "runtime/prefix_cache_runtime.h"
#include "tests/cache_fixture.h"

using namespace radixkv;

namespace {

constexpr uint32_t kPageTokens = 4;

// Every event of every batch, in order.
struct Recorded {
  events::EventBatcher batcher;
  std::vector<events::KvEvent> events;

  Recorded()
      : batcher(options(), [this](events::EventBatch&& b) {
          for (events::KvEvent& e : b.events) events.push_back(std::move(e));
        }) {}
  static events::EventBatcherOptions options() {
    events::EventBatcherOptions o;
    o.page_tokens = kPageTokens;
    return o;
  }
  // (medium, reason) -> the blocks removed so, over events [from, end).
  std::map<std::pair<std::string, std::string>, std::set<events::BlockHash>> removed(
      size_t from = 0) const {
    std::map<std::pair<std::string, std::string>, std::set<events::BlockHash>> out;
    for (size_t i = from; i < events.size(); ++i) {
      if (const auto* r = std::get_if<events::BlockRemoved>(&events[i])) {
        auto& blocks = out[{r->medium.value_or("?"), r->reason.value_or("none")}];
        blocks.insert(r->block_hashes.begin(), r->block_hashes.end());
      }
    }
    return out;
  }
  // The blocks stored on `medium` over events [from, end).
  std::set<events::BlockHash> stored(const std::string& medium, size_t from = 0) const {
    std::set<events::BlockHash> out;
    for (size_t i = from; i < events.size(); ++i) {
      if (const auto* s = std::get_if<events::BlockStored>(&events[i]); s && s->medium == medium)
        out.insert(s->block_hashes.begin(), s->block_hashes.end());
    }
    return out;
  }
};

// A prompt of `pages` whole pages and one token more, its own for `seed`.
std::vector<TokenId> prompt_of(int seed, uint32_t pages) {
  std::vector<TokenId> p(pages * kPageTokens + 1);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<TokenId>(seed * 1000 + i);
  return p;
}

void serve(PrefixCacheRuntime& runtime, const std::vector<TokenId>& prompt) {
  const AdmitResult r = runtime.admit({1, 0, prompt});
  REQUIRE(r.ok());
  runtime.wait_load(r.load_ticket);
  runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
  runtime.finish(r.seq);
}

using Key = std::pair<std::string, std::string>;

}  // namespace

TEST_CASE("removal reasons: watermark eviction says evicted, on exactly the blocks it evicted") {
  Recorded rec;
  PagePool pool(KvLayout{1, 1, 4, 2, kPageTokens}, 16);
  PrefixCacheRuntime runtime(pool, {.high_watermark = 0.5, .low_watermark = 0.25},
                             TierConfig::with_events(&rec.batcher));
  serve(runtime, prompt_of(1, 4));
  const std::set<events::BlockHash> first = rec.stored("GPU");
  serve(runtime, prompt_of(2, 4));
  const std::set<events::BlockHash> both = rec.stored("GPU");
  CHECK(rec.removed().empty());
  serve(runtime, prompt_of(3, 4));  // 12 pages > high (8): evicted down to low (4), oldest first
  const auto removed = rec.removed();
  REQUIRE(removed.size() == 1);
  CHECK(removed.begin()->first == Key{"GPU", "evicted"});
  CHECK(removed.begin()->second == both);  // the first two prompts' pages
  CHECK(first.size() == 4);
}

TEST_CASE("removal reasons: write-back demotion says demoted, a load back promoted, clear clears") {
  Recorded rec;
  const KvLayout layout{1, 1, 4, 2, kPageTokens};
  PagePool pool(layout, 16);
  PagePool host(layout, 32);
  TierConfig tiers = TierConfig::with_events(&rec.batcher);
  tiers.host.pool = &host;
  tiers.host.write_policy = "write_back";
  PrefixCacheRuntime runtime(pool, {.high_watermark = 1.0, .low_watermark = 1.0}, tiers);
  const auto prompt = prompt_of(1, 4);
  serve(runtime, prompt);
  const std::set<events::BlockHash> pages = rec.stored("GPU");
  REQUIRE(pages.size() == 4);

  size_t mark = rec.events.size();
  CHECK(runtime.evict(4) == 4);  // to the host: the device copies leave, the host ones arrive
  CHECK(rec.removed(mark) ==
        std::map<Key, std::set<events::BlockHash>>{{{"GPU", "demoted"}, pages}});
  CHECK(rec.stored("CPU", mark) == pages);

  mark = rec.events.size();
  serve(runtime, prompt);  // loads the host run back; under write-back the host copies leave
  CHECK(rec.removed(mark) ==
        std::map<Key, std::set<events::BlockHash>>{{{"CPU", "promoted"}, pages}});
  CHECK(rec.stored("GPU", mark) == pages);

  mark = rec.events.size();
  runtime.clear_cache();
  REQUIRE(rec.events.size() == mark + 1);
  CHECK(std::holds_alternative<events::AllBlocksCleared>(rec.events.back()));
}

TEST_CASE("removal reasons: a leaf the engine erases says cleared, one eviction evicted") {
  Recorded rec;
  PagePool pool(KvLayout{1, 1, 4, 2, kPageTokens}, 16);
  RadixTree tree(pool, make_policy("lru"));
  tree.add_tier_events(&rec.batcher);
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(4, pages));
  const std::vector<TokenId> tokens = radixkv::testing::iota_tokens(4 * kPageTokens);
  tree.insert(0, tokens, pages);
  pool.release(pages);  // the tree holds its own references
  tree.flush_events();
  const std::set<events::BlockHash> stored = rec.stored("GPU");
  REQUIRE(stored.size() == 4);
  CHECK(tree.evict_pages(1) == 1);  // the tail page
  tree.flush_events();
  const auto after_evict = rec.removed();
  REQUIRE(after_evict.size() == 1);
  CHECK(after_evict.begin()->first == Key{"GPU", "evicted"});
  CHECK(after_evict.begin()->second.size() == 1);
  const size_t mark = rec.events.size();
  tree.erase_leaf(tree.match(0, tokens).node);
  tree.flush_events();
  const auto erased = rec.removed(mark);
  REQUIRE(erased.size() == 1);
  CHECK(erased.begin()->first == Key{"GPU", "cleared"});
  CHECK(erased.begin()->second.size() == 3);
  // Together: every stored block, each removed once.
  std::set<events::BlockHash> all = after_evict.begin()->second;
  all.insert(erased.begin()->second.begin(), erased.begin()->second.end());
  CHECK(all == stored);
}
