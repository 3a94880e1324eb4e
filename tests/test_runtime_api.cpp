// What an engine gets from PrefixCacheRuntime beyond the request calls (issues 13 and 14): a
// policy of its own, the admit cut and a side-effect-free look at the cache, one runtime per pool,
// and finish/abort that refuse a sequence whose pages were released behind the runtime's back
// without changing anything.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime/prefix_cache_runtime.h"
#include "tests/cache_fixture.h"

using namespace radixkv;
using radixkv::testing::iota_tokens;

namespace {

const KvLayout kLayout{1, 1, 4, 2, 4};  // 4 tokens a page

// A policy the registry does not know: the leaf that became evictable last goes first (a stack),
// the opposite of LRU in the test below.
class NewestFirstPolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "newest-first"; }
  void add(EvictionEntry& entry) override { stack_.push_back(&entry); }
  void remove(EvictionEntry& entry) override { stack_.erase(find(entry)); }
  void on_access(EvictionEntry&, const AccessHint&) override { ++accesses; }
  EvictionEntry* victim() override { return stack_.empty() ? nullptr : stack_.back(); }
  bool contains(const EvictionEntry& entry) const override { return find(entry) != stack_.end(); }
  std::size_t size() const override { return stack_.size(); }
  uint64_t accesses = 0;

 private:
  std::vector<EvictionEntry*>::const_iterator find(const EvictionEntry& entry) const {
    return std::find(stack_.begin(), stack_.end(), &entry);
  }
  std::vector<EvictionEntry*> stack_;
};

// Admits `prompt`, computes it whole and finishes: its full pages end up cached.
void serve(PrefixCacheRuntime& runtime, const std::vector<TokenId>& prompt) {
  const AdmitResult r = runtime.admit({1, 0, prompt});
  REQUIRE(r.ok());
  runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
  runtime.finish(r.seq);
}

}  // namespace

TEST_CASE("RuntimeConfig takes a policy factory: an engine's own policy decides the victims") {
  // Two prompts of two whole pages (plus a token) are cached, a then b. Evicting one page takes
  // b's tail under the custom policy (b became evictable last) and a's tail under LRU.
  const auto a = iota_tokens(9, 0), b = iota_tokens(9, 100);
  for (bool custom : {true, false}) {
    CAPTURE(custom);
    PagePool pool(kLayout, 16);
    NewestFirstPolicy* plugged = nullptr;
    RuntimeConfig config;
    if (custom) {
      config.policy = [&plugged] {
        auto policy = std::make_unique<NewestFirstPolicy>();
        plugged = policy.get();
        return policy;
      };
    }
    PrefixCacheRuntime runtime(pool, config);
    CHECK(runtime.tree().policy().name() == (custom ? "newest-first" : "lru"));
    serve(runtime, a);
    serve(runtime, b);
    REQUIRE(runtime.evict(1) == 1);
    CHECK(runtime.cached_prefix(0, a) == (custom ? 8 : 4));
    CHECK(runtime.cached_prefix(0, b) == (custom ? 4 : 8));
    runtime.check_accounting();
    if (custom) {
      REQUIRE(plugged != nullptr);
      CHECK(plugged->accesses > 0);
      CHECK(plugged->size() == 2);
    }
  }
  PagePool pool(kLayout, 16);
  RuntimeConfig none;
  none.policy = [] { return std::unique_ptr<EvictionPolicy>(); };
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(pool, none), doctest::Contains("returned no policy"),
                       std::invalid_argument);
}

TEST_CASE("reuse_cut is admit's cut, and cached_prefix predicts admit without a side effect") {
  for (uint32_t P : {1u, 4u, 16u}) {
    CAPTURE(P);
    PagePool pool(KvLayout{1, 1, 4, 2, P}, 64);
    PrefixCacheRuntime runtime(pool);
    for (std::size_t len = 1; len <= 3 * P + 1; ++len) {
      CHECK(runtime.reuse_cut(len) == (len - 1) / P * P);
    }
    const auto cached = iota_tokens(3 * P);
    serve(runtime, cached);
    // Queries that end inside, at and past the cached path: a prefix of it, all of it, more.
    for (std::size_t len = 1; len <= 4 * P + 1; ++len) {
      CAPTURE(len);
      auto query = iota_tokens(len);
      const uint64_t nodes = runtime.tree().stats().nodes;
      const uint64_t splits = runtime.tree().stats().splits;
      const uint32_t predicted = runtime.cached_prefix(0, query);
      CHECK(predicted == std::min<std::size_t>(runtime.reuse_cut(len), 3 * P));
      CHECK(runtime.tree().stats().nodes == nodes);  // no split, no access
      CHECK(runtime.tree().stats().splits == splits);
      CHECK(runtime.cached_prefix(1, query) == 0);  // another namespace
      const AdmitResult admitted = runtime.admit({len, 0, query});
      REQUIRE(admitted.ok());
      CHECK(admitted.reused_tokens == predicted);
      runtime.abort(admitted.seq);
    }
    CHECK(runtime.check_accounting() == 0);
  }
}

TEST_CASE("one runtime per pool: a second one, or a pool with pages in use, is refused") {
  PagePool pool(kLayout, 16);
  {
    PrefixCacheRuntime first(pool);
    CHECK_THROWS_WITH_AS(PrefixCacheRuntime{pool},
                         doctest::Contains("its PagePool already serves another runtime"),
                         std::logic_error);
    // The refusal left the first one whole.
    serve(first, iota_tokens(9));
    CHECK(first.cached_pages() == 2);
    CHECK(first.check_accounting() == 0);
  }
  {
    PrefixCacheRuntime next(pool);  // the first is gone, its claim with it
    CHECK(next.check_accounting() == 0);
  }
  std::vector<PageId> held;
  REQUIRE(pool.allocate(1, held));
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime{pool}, doctest::Contains("1 of its PagePool's 16 pages"),
                       std::logic_error);
  pool.release(held);
  PagePool part(pool, 8);
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime{pool}, doctest::Contains("lent to partitions"),
                       std::logic_error);
  PrefixCacheRuntime on_part(part);
  serve(on_part, iota_tokens(9));
  CHECK(on_part.check_accounting() == 0);
}

TEST_CASE("finish and abort refuse a sequence whose page was released behind the runtime's back") {
  // A 12-token prompt in 3 pages: page 0 committed (tree and sequence hold it), pages 1 and 2
  // private, page 1 computed. The caller then releases page 2 itself. finish (which would cache
  // page 1) and abort must throw naming that page and leave everything as it was: the sequence
  // live and locked, no page cached or released. Once the caller takes the page back, both work.
  for (bool finish : {true, false}) {
    CAPTURE(finish);
    PagePool pool(kLayout, 16);
    PrefixCacheRuntime runtime(pool);
    const auto prompt = iota_tokens(12);
    const AdmitResult admitted = runtime.admit({5, 0, prompt});
    REQUIRE(admitted.ok());
    runtime.commit(admitted.seq, 4);
    runtime.mark_computed(admitted.seq, 8);
    const std::vector<PageId> table(admitted.block_table.begin(), admitted.block_table.end());
    REQUIRE(table.size() == 3);
    pool.release(table[2]);  // the misuse

    const uint64_t cached = runtime.cached_pages(), locked = runtime.tree().protected_pages();
    const uint32_t free_pages = pool.free_pages();
    const auto end = [&] {
      finish ? static_cast<void>(runtime.finish(admitted.seq)) : runtime.abort(admitted.seq);
    };
    CHECK_THROWS_WITH_AS(end(), doctest::Contains(fmt::format("page {}", table[2]).c_str()),
                         std::logic_error);
    CHECK(runtime.is_live(admitted.seq));
    const SequenceView view = runtime.view(admitted.seq);
    CHECK(std::vector<PageId>(view.block_table.begin(), view.block_table.end()) == table);
    CHECK(view.committed_pages == 1);
    CHECK(runtime.cached_pages() == cached);
    CHECK(runtime.tree().protected_pages() == locked);
    CHECK(pool.free_pages() == free_pages);
    runtime.tree().verify();

    // The freed page is the top of the free list: allocating it gives the sequence its reference
    // back, and the pool is as the runtime left it.
    std::vector<PageId> back;
    REQUIRE(pool.allocate(1, back));
    REQUIRE(back[0] == table[2]);
    runtime.check_accounting();
    end();
    CHECK(runtime.cached_pages() == (finish ? 2 : 1));
    CHECK(runtime.check_accounting() == 0);
  }
}

namespace {

// What admit reuses of `prompt` (then aborts, caching nothing): {whole-page hits, partial hits}.
std::pair<uint32_t, uint32_t> reuse_of(PrefixCacheRuntime& runtime, std::vector<TokenId> prompt,
                                       AdmitMode mode = AdmitMode::kCompute, Namespace ns = 0) {
  const AdmitResult r = runtime.admit({.id = 2, .name_space = ns, .prompt = prompt, .mode = mode});
  REQUIRE(r.ok());
  CHECK(r.reused_tokens == r.device_hit_tokens + r.partial_hit_tokens);
  CHECK(r.position_offset == r.reused_tokens);
  CHECK(runtime.view(r.seq).reused_tokens == r.reused_tokens);
  runtime.abort(r.seq);
  return {r.device_hit_tokens, r.partial_hit_tokens};
}

}  // namespace

TEST_CASE("partial-page reuse: the leading tokens of a cached page, by hand, and off by default") {
  // Cached: A = 1..10, whose whole pages are [1 2 3 4] [5 6 7 8] (4-token pages).
  const std::vector<TokenId> a = iota_tokens(10, 1);
  using Hits = std::pair<uint32_t, uint32_t>;
  struct Case {
    std::vector<TokenId> prompt;
    Hits on, off;  // {whole-page hits, partial hits} with partial reuse on, and off
  };
  const std::vector<Case> cases = {
      // Diverges after 5 6 in the second page: 2 of its tokens copied.
      {{1, 2, 3, 4, 5, 6, 9, 9, 9, 9}, {4, 2}, {4, 0}},
      // A's first 8 tokens exactly: the cut leaves the second page to compute, but for its last
      // token 3 of its tokens are copied.
      {{1, 2, 3, 4, 5, 6, 7, 8}, {4, 3}, {4, 0}},
      // Both pages whole; the 9th token is the last, always computed: nothing partial.
      {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {8, 0}, {8, 0}},
      // Diverges inside the first page.
      {{1, 2, 3, 9, 9}, {0, 3}, {0, 0}},
      // Two tokens only: the first may be copied, the last is computed.
      {{1, 2}, {0, 1}, {0, 0}},
      // Nothing in common.
      {{7, 7, 7, 7, 7}, {0, 0}, {0, 0}},
  };
  for (bool on : {true, false}) {
    CAPTURE(on);
    PagePool pool(KvLayout{1, 1, 1, 8, 4}, 32, make_host_backend());
    RuntimeConfig config;
    if (on) config.partial_reuse = true;
    PrefixCacheRuntime runtime(pool, config);
    // A's pages hold bytes of their own: page i of A is filled with 0x10 + i.
    const AdmitResult r = runtime.admit({1, 0, a});
    REQUIRE(r.ok());
    for (std::size_t i = 0; i < r.block_table.size(); ++i) {
      std::memset(pool.backend().page_address(r.block_table[i]), 0x10 + static_cast<int>(i),
                  pool.bytes_per_page());
    }
    runtime.commit(r.seq, 10);
    runtime.finish(r.seq);
    uint64_t partial = 0;
    for (const Case& c : cases) {
      CAPTURE(c.prompt);
      const Hits expected = on ? c.on : c.off;
      CHECK(reuse_of(runtime, c.prompt) == expected);
      partial += expected.second;
    }
    CHECK(runtime.stats().partial_hit_tokens == partial);
    // Another namespace shares nothing, partial pages included.
    CHECK(reuse_of(runtime, {1, 2, 3, 4, 5, 6, 9, 9}, AdmitMode::kCompute, 1) == Hits{0, 0});
    // Cache only: whole prompt pages; the page after the match may be reused in part.
    CHECK(reuse_of(runtime, {1, 2, 3, 4, 5, 6, 9, 9}, AdmitMode::kCacheOnly) ==
          Hits{4, on ? 2u : 0u});
    CHECK(reuse_of(runtime, {1, 2, 3, 4, 5, 6, 7, 8, 9, 9}, AdmitMode::kCacheOnly) == Hits{8, 0});
    // The copy: the sequence's second page holds A's second page's bytes.
    const AdmitResult b = runtime.admit({3, 0, std::vector<TokenId>{1, 2, 3, 4, 5, 6, 9, 9, 9}});
    REQUIRE(b.ok());
    const auto* copied =
        static_cast<const unsigned char*>(pool.backend().page_address(b.block_table[1]));
    CHECK(std::all_of(copied, copied + pool.bytes_per_page(),
                      [](unsigned char byte) { return byte == 0x11; }) == on);
    runtime.abort(b.seq);
    CHECK(runtime.check_accounting() == 0);
  }
}

TEST_CASE("a request's session and sub-agent stay with its sequence") {
  PagePool pool(kLayout, 16);
  PrefixCacheRuntime runtime(pool);
  const std::vector<TokenId> prompt = iota_tokens(6, 0);
  const AdmitResult a = runtime.admit({.id = 1, .prompt = prompt, .session = 42, .agent = 3});
  const AdmitResult b = runtime.admit({.id = 2, .prompt = prompt});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(runtime.view(a.seq).session == 42);
  CHECK(runtime.view(a.seq).agent == 3);
  CHECK(runtime.view(b.seq).session == 0);
  CHECK(runtime.view(b.seq).agent == 0);
  runtime.abort(a.seq);
  runtime.abort(b.seq);
}
