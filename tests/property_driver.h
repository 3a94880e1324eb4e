// PropertyDriver: random cache operations checked against PageOracle and TreeModel, driven by any
// source of choices: a seeded generator in the doctest property test, the fuzzer's bytes in the
// libFuzzer harness (tests/fuzz_cache.cpp).
//
// Keys share prefixes heavily (a few stems, then tails over a three-token alphabet) so that matches
// end inside edges, inserts split nodes and eviction reaches parents. Accesses carry varying
// priorities and a clock that moves on, for the policies that read them. After every operation the
// results are compared (matched tokens, page ids, cached prefix lengths), and every operation that
// may evict is compared victim by victim with the reference model of the policy driven through
// TreeModel (tests/tree_model.h): which leaves lost pages and how many. PageOracle also checks that
// what went was evictable and that nothing outlived its parent, and for LRU predicts the pages
// independently of the node structure. After every batch: verify(), the page accounting
// identity, the whole cached set, and the model's node, leaf and split counts. A disagreement
// throws PropertyFailure.
#pragma once

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/cache_fixture.h"
#include "tests/page_oracle.h"
#include "tests/tree_model.h"

namespace radixkv::testing {

struct PropertyFailure : std::logic_error {
  using std::logic_error::logic_error;
};

inline void expect(bool ok, const std::string& what) {
  if (!ok) throw PropertyFailure("property violated: " + what);
}

constexpr uint32_t kCapacityPages = 48;
constexpr int kBatch = 500;

struct HeldLock {
  RadixNode* node;
  Namespace ns;
  std::vector<TokenId> key;
  uint32_t pages;
  std::vector<PageId> held;  // the "sequence's" references to the matched pages
};

// The tree and the model agree on the cached and evictable pages, on the nodes, the evictable
// leaves and the splits so far.
inline void expect_same_shape(const RadixTree& tree, const TreeModel& model) {
  expect(tree.cached_pages() == model.cached_pages(), "the model caches as many pages as the tree");
  expect(tree.evictable_pages() == model.evictable_pages(),
         "the model has as many evictable pages as the tree");
  expect(tree.stats().nodes == model.nodes(), "the model has as many nodes as the tree");
  expect(tree.evictable_leaves() == model.evictable_leaves(),
         "the model has as many evictable leaves as the tree");
  expect(tree.stats().splits == model.stats().splits, "the model split as often as the tree");
}

template <typename Source>
class PropertyDriver {
 public:
  PropertyDriver(std::string_view policy, uint32_t page_tokens, Source source)
      : f_(page_tokens, kCapacityPages, policy),
        oracle_(page_tokens),
        alloc_(f_.pool, f_.evictor,
               CacheBudget({kCapacityPages * f_.pool.bytes_per_page(), 1.0, 1.0},
                           f_.pool.bytes_per_page())),
        budget_(f_.pool, f_.evictor,
                CacheBudget({kCapacityPages * 3 / 4 * f_.pool.bytes_per_page(), 0.9, 0.6},
                            f_.pool.bytes_per_page())),
        exact_lru_(policy == "lru"),
        model_(policy, page_tokens),
        source_(std::move(source)),
        P_(page_tokens) {
    for (int s = 0; s < 4; ++s) {
      std::vector<TokenId> stem(size_t{P_} * (source_() % 5));
      for (TokenId& t : stem) t = static_cast<TokenId>(source_() % 1000) - 500;
      stems_.push_back(stem);
    }
  }

  // Runs until `operations` are done or the source runs dry.
  void run(int operations) {
    for (int op = 1; op <= operations && source_.has_more(); ++op) {
      step();
      if (op % kBatch == 0) check_all();
    }
    while (!locks_.empty()) unlock(0);
    while (!privates_.empty()) release_private(0);
    check_all();
  }

  const TreeStats& stats() const { return f_.tree.stats(); }
  const TreeModel& model() const { return model_; }

 private:
  int uniform(int n) { return static_cast<int>(source_() % static_cast<uint64_t>(n)); }

  std::pair<Namespace, std::vector<TokenId>> random_key() {
    const Namespace ns = uniform(10) == 0 ? 1 : 0;
    std::vector<TokenId> key = stems_[uniform(static_cast<int>(stems_.size()))];
    const int tail = uniform(6 * static_cast<int>(P_) + static_cast<int>(P_));
    for (int i = 0; i < tail; ++i) key.push_back(uniform(3));
    return {ns, key};
  }

  // The access a match or an insert of `key` passes: a priority that varies with the key, and the
  // caller's clock, a quarter second per operation. Neither draws a choice, so that a seed makes
  // the same keys and operations as before hints were passed.
  AccessHint hint_for(const std::vector<TokenId>& key) const {
    return {25 * static_cast<int32_t>(key.size() % 5), now_};
  }

  // Runs an operation that may evict up to `asked` pages, and checks what it took.
  template <typename Evicting>
  void evicting(uint64_t asked, Evicting&& operation) {
    bool tie = false;
    const uint64_t unlocked = oracle_.unlocked();
    const std::set<PageId> predicted =
        exact_lru_ ? oracle_.lru_victims(asked, tie) : std::set<PageId>{};
    const std::vector<TreeModel::Victim> victims = model_.evict(asked);
    operation();
    const std::set<PageId> gone = oracle_.gone_from(f_.tree);
    expect(gone.size() == std::min(asked, unlocked), "gone.size() == std::min(asked, unlocked)");
    if (exact_lru_ && !tie) expect(gone == predicted, "gone == predicted");
    const std::string mismatch = TreeModel::compare(victims, gone);
    expect(mismatch.empty(), mismatch);
    const std::string problem = oracle_.apply_eviction(gone);
    expect(problem.empty(), problem);
  }

  bool allocate(uint32_t n, std::vector<PageId>& out) {
    const uint32_t free = f_.pool.free_pages();
    const bool expect_ok = free + oracle_.unlocked() >= n;
    const uint64_t asked = n > free ? n - free : 0;
    AllocResult result;
    evicting(asked, [&] { result = alloc_.allocate(n, out); });
    expect(result.ok() == expect_ok, "result.ok() == expect_ok");
    return result.ok();
  }

  void insert() {
    auto [ns, key] = random_key();
    const uint32_t n = static_cast<uint32_t>(key.size() / P_);
    std::vector<PageId> pages;
    if (!allocate(n, pages)) return;
    const AccessHint hint = hint_for(key);
    const InsertResult result = f_.tree.insert(ns, key, pages, hint);
    const uint32_t cached = oracle_.insert(ns, key, pages);
    const TreeModel::Inserted modelled = model_.insert(ns, key, pages, hint);
    expect(result.cached_tokens == cached * P_, "result.cached_tokens == cached * P_");
    expect(result.new_pages == n - cached, "result.new_pages == n - cached");
    expect(modelled.cached_pages == cached, "the model caches what the oracle does");
    f_.pool.release(pages);
  }

  MatchResult match(Namespace ns, const std::vector<TokenId>& key, std::vector<PageId>& got) {
    const AccessHint hint = hint_for(key);
    const MatchResult m = f_.tree.match(ns, key, &got, hint);
    std::vector<PageId> want;
    const uint32_t k = oracle_.match_pages(ns, key, &want);
    expect(m.tokens == k * P_, "m.tokens == k * P_");
    expect(model_.match(ns, key, hint) == k, "the model matches what the oracle does");
    expect(got == want, "got == want");
    expect(m.node->prefix_pages + m.node->num_pages() == k,
           "m.node->prefix_pages + m.node->num_pages() == k");
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
    model_.lock(ns, key, m.tokens / P_);
    locks_.push_back({m.node, ns, key, m.tokens / P_, got});
  }

  void unlock(size_t i) {
    HeldLock& l = locks_[i];
    f_.tree.unlock(l.node);
    oracle_.lock(l.ns, l.key, l.pages, -1);
    model_.unlock(l.ns, l.key, l.pages);
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
    bool threw = false;
    try {
      f_.tree.unlock(m.node);
    } catch (const std::logic_error&) {
      threw = true;
    }
    expect(threw, "unlock of an unlocked node did not throw");
    expect(f_.tree.protected_pages() == protected_before,
           "f_.tree.protected_pages() == protected_before");
  }

  void step() {
    now_ += 0.25;
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
      expect(released == std::min<uint64_t>(k, released + oracle_.unlocked()),
             "released == std::min<uint64_t>(k, released + oracle_.unlocked())");
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
    const std::string difference = oracle_.differences(f_.tree);
    expect(difference.empty(), difference);
    expect_same_shape(f_.tree, model_);
  }

  CacheFixture f_;
  PageOracle oracle_;
  BudgetedAllocator alloc_;
  BudgetedAllocator budget_;  // a smaller budget, for the watermark operation
  bool exact_lru_;
  TreeModel model_;
  Source source_;
  uint32_t P_;
  std::vector<std::vector<TokenId>> stems_;
  std::vector<HeldLock> locks_;
  std::vector<std::vector<PageId>> privates_;
  double now_ = 0.0;
};

}  // namespace radixkv::testing
