// What an engine gets from PrefixCacheRuntime beyond the request calls (issues 13 and 14): a
// policy of its own, the admit cut and a side-effect-free look at the cache, one runtime per pool,
// and finish/abort that refuse a sequence whose pages were released behind the runtime's back
// without changing anything.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
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
