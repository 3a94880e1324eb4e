// Property test: long random sequences of cache operations, checked against PageOracle.
//
// Keys share prefixes heavily (a few stems, then tails over a three-token alphabet) so that matches
// end inside edges, inserts split nodes and eviction reaches parents. After every operation the
// results are compared (matched tokens, page ids, cached prefix lengths, which pages eviction took);
// after every batch verify(), the page accounting identity and the whole cached set are compared.
// For LRU the oracle predicts exactly which pages go; for every policy it checks that what went was
// evictable and that nothing outlived its parent. Set RADIXKV_SEED to replay a failing seed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>

#include "tests/cache_fixture.h"
#include "tests/page_oracle.h"

using namespace radixkv;
using radixkv::testing::CacheFixture;
using radixkv::testing::PageOracle;

namespace {

constexpr uint32_t kCapacityPages = 48;
constexpr int kBatch = 500;

struct HeldLock {
  RadixNode* node;
  Namespace ns;
  std::vector<TokenId> key;
  uint32_t pages;
  std::vector<PageId> held;  // the "sequence's" references to the matched pages
};

class PropertyRun {
 public:
  PropertyRun(std::string_view policy, uint32_t page_tokens, uint64_t seed)
      : f_(page_tokens, kCapacityPages, policy),
        oracle_(page_tokens),
        alloc_(f_.pool, f_.tree, CacheBudget({kCapacityPages * f_.pool.bytes_per_page(), 1.0, 1.0},
                                             f_.pool.bytes_per_page())),
        budget_(f_.pool, f_.tree,
                CacheBudget({kCapacityPages * 3 / 4 * f_.pool.bytes_per_page(), 0.9, 0.6},
                            f_.pool.bytes_per_page())),
        exact_lru_(policy == "lru"),
        rng_(seed),
        P_(page_tokens) {
    for (int s = 0; s < 4; ++s) {
      std::vector<TokenId> stem(size_t{P_} * (rng_() % 5));
      for (TokenId& t : stem) t = static_cast<TokenId>(rng_() % 1000) - 500;
      stems_.push_back(stem);
    }
  }

  void run(int operations) {
    for (int op = 1; op <= operations; ++op) {
      step();
      if (op % kBatch == 0) check_all();
    }
    while (!locks_.empty()) unlock(0);
    while (!privates_.empty()) release_private(0);
    check_all();
    // The workload must have reached the paths it exists to test.
    CHECK(f_.tree.stats().splits > 100);
    CHECK(f_.tree.stats().evicted_pages > 1000);
    CHECK(f_.tree.stats().evicted_nodes > 100);
  }

 private:
  int uniform(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }

  std::pair<Namespace, std::vector<TokenId>> random_key() {
    const Namespace ns = uniform(10) == 0 ? 1 : 0;
    std::vector<TokenId> key = stems_[uniform(static_cast<int>(stems_.size()))];
    const int tail = uniform(6 * static_cast<int>(P_) + static_cast<int>(P_));
    for (int i = 0; i < tail; ++i) key.push_back(uniform(3));
    return {ns, key};
  }

  std::set<PageId> gone_from_tree() const {
    std::set<PageId> gone;
    for (const auto& [k, page] : oracle_.pages()) {
      if (!f_.tree.indexes_page(page.id)) gone.insert(page.id);
    }
    return gone;
  }

  // Runs an operation that may evict up to `asked` pages, and checks what it took.
  template <typename Evicting>
  void evicting(uint64_t asked, Evicting&& operation) {
    bool tie = false;
    const uint64_t unlocked = oracle_.unlocked();
    const std::set<PageId> predicted =
        exact_lru_ ? oracle_.lru_victims(asked, tie) : std::set<PageId>{};
    operation();
    const std::set<PageId> gone = gone_from_tree();
    REQUIRE(gone.size() == std::min(asked, unlocked));
    if (exact_lru_ && !tie) REQUIRE(gone == predicted);
    const std::string problem = oracle_.apply_eviction(gone);
    REQUIRE_MESSAGE(problem.empty(), problem);
  }

  bool allocate(uint32_t n, std::vector<PageId>& out) {
    const uint32_t free = f_.pool.free_pages();
    const bool expect_ok = free + oracle_.unlocked() >= n;
    const uint64_t asked = n > free ? n - free : 0;
    AllocResult result;
    evicting(asked, [&] { result = alloc_.allocate(n, out); });
    REQUIRE(result.ok() == expect_ok);
    return result.ok();
  }

  void insert() {
    auto [ns, key] = random_key();
    const uint32_t n = static_cast<uint32_t>(key.size() / P_);
    std::vector<PageId> pages;
    if (!allocate(n, pages)) return;
    const InsertResult result = f_.tree.insert(ns, key, pages);
    const uint32_t cached = oracle_.insert(ns, key, pages);
    REQUIRE(result.cached_tokens == cached * P_);
    REQUIRE(result.new_pages == n - cached);
    f_.pool.release(pages);
  }

  MatchResult match(Namespace ns, const std::vector<TokenId>& key, std::vector<PageId>& got) {
    const MatchResult m = f_.tree.match(ns, key, &got);
    std::vector<PageId> want;
    const uint32_t k = oracle_.match_pages(ns, key, &want);
    REQUIRE(m.tokens == k * P_);
    REQUIRE(got == want);
    REQUIRE(m.node->prefix_pages + m.node->num_pages() == k);
    oracle_.touch(ns, key, k);
    return m;
  }

  void lock() {
    auto [ns, key] = random_key();
    std::vector<PageId> got;
    const MatchResult m = match(ns, key, got);
    f_.tree.lock(m.node);
    for (PageId p : got) f_.pool.retain(p);
    oracle_.lock(ns, key, m.tokens / P_, +1);
    locks_.push_back({m.node, ns, key, m.tokens / P_, got});
  }

  void unlock(size_t i) {
    HeldLock& l = locks_[i];
    f_.tree.unlock(l.node);
    oracle_.lock(l.ns, l.key, l.pages, -1);
    f_.pool.release(l.held);
    locks_[i] = std::move(locks_.back());
    locks_.pop_back();
  }

  void release_private(size_t i) {
    f_.pool.release(privates_[i]);
    privates_[i] = std::move(privates_.back());
    privates_.pop_back();
  }

  void bad_unlock() {
    auto [ns, key] = random_key();
    std::vector<PageId> got;
    const MatchResult m = match(ns, key, got);
    if (m.node->lock_count() != 0) return;
    const uint64_t protected_before = f_.tree.protected_pages();
    REQUIRE_THROWS_AS(f_.tree.unlock(m.node), std::logic_error);
    REQUIRE(f_.tree.protected_pages() == protected_before);
  }

  void step() {
    const int dice = uniform(100);
    if (dice < 30) {
      insert();
    } else if (dice < 55) {
      auto [ns, key] = random_key();
      std::vector<PageId> got;
      match(ns, key, got);
    } else if (dice < 65) {
      if (locks_.size() < 6) lock();
    } else if (dice < 75) {
      if (!locks_.empty()) unlock(uniform(static_cast<int>(locks_.size())));
    } else if (dice < 85) {
      const uint64_t k = 1 + uniform(6);
      uint64_t released = 0;
      evicting(k, [&] { released = f_.tree.evict_pages(k); });
      REQUIRE(released == std::min<uint64_t>(k, released + oracle_.unlocked()));
    } else if (dice < 92) {
      std::vector<PageId> pages;
      if (privates_.size() < 4 && allocate(1 + uniform(4), pages)) privates_.push_back(pages);
    } else if (dice < 97) {
      if (!privates_.empty()) release_private(uniform(static_cast<int>(privates_.size())));
    } else if (dice < 99) {
      const uint64_t excess = budget_.budget().excess_pages(f_.tree.cached_pages());
      evicting(excess, [&] { budget_.enforce_watermarks(); });
    } else {
      bad_unlock();
    }
  }

  void check_all() {
    std::vector<std::vector<PageId>> held = privates_;
    for (const HeldLock& l : locks_) held.push_back(l.held);
    f_.check(held);
    REQUIRE(f_.tree.cached_pages() == oracle_.size());
    REQUIRE(f_.tree.evictable_pages() == oracle_.unlocked());
    for (const auto& [k, page] : oracle_.pages()) {
      if (page.children != 0) continue;
      std::vector<PageId> got, want;
      REQUIRE(f_.tree.peek(k.first, k.second, &got) == k.second.size());
      oracle_.match_pages(k.first, k.second, &want);
      REQUIRE(got == want);
    }
  }

  CacheFixture f_;
  PageOracle oracle_;
  BudgetedAllocator alloc_;
  BudgetedAllocator budget_;  // a smaller budget, for the watermark operation
  bool exact_lru_;
  std::mt19937_64 rng_;
  uint32_t P_;
  std::vector<std::vector<TokenId>> stems_;
  std::vector<HeldLock> locks_;
  std::vector<std::vector<PageId>> privates_;
};

uint64_t seed_for(uint64_t fallback) {
  const char* env = std::getenv("RADIXKV_SEED");
  return env ? std::strtoull(env, nullptr, 0) : fallback;
}

void run_property(uint32_t page_tokens, int operations) {
  for (std::string_view policy : policy_names()) {
    const uint64_t seed = seed_for(0x5eed0000 + page_tokens * 131 + policy.size());
    INFO("policy ", policy, ", page_tokens ", page_tokens, ", seed ", seed,
         " (rerun with RADIXKV_SEED=", seed, ")");
    PropertyRun(policy, page_tokens, seed).run(operations);
  }
}

}  // namespace

// 3 x 70,000 = 210,000 operations per policy.
TEST_CASE("property: random operations agree with the oracle, page size 1") { run_property(1, 70000); }
TEST_CASE("property: random operations agree with the oracle, page size 2") { run_property(2, 70000); }
TEST_CASE("property: random operations agree with the oracle, page size 16") { run_property(16, 70000); }
