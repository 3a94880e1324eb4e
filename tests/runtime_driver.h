// RuntimeDriver: random sequences of runtime-adapter calls (admit, chunked commit, decode, finish,
// abort, double finish, evict) checked against PageOracle, driven by any source of choices: a
// seeded generator in test_property.cpp, the fuzzer's bytes in tests/fuzz_cache.cpp.
//
// Requests carry priorities that vary with the prompt, and the caller's clock (set_now) moves on.
//
// After every call: the tokens admit reused equal the oracle's longest cached prefix of the prompt
// cut below its last token; admit and decode succeed exactly when free plus evictable pages cover
// what they need; what was evicted is, victim by victim, what the reference model of the policy
// driven through TreeModel predicts (tests/tree_model.h), including the watermark rule: after
// commit, finish and abort, cached pages above the high watermark are evicted down to the low one;
// whatever was evicted was evictable; and PrefixCacheRuntime::check_accounting() holds (every
// refcount equals the tree's reference plus the live block tables'). After every batch, verify(),
// the whole cached set against the oracle and the model's shape against the tree. A disagreement
// throws PropertyFailure.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "runtime/prefix_cache_runtime.h"
#include "tests/event_log.h"
#include "tests/page_oracle.h"
#include "tests/property_driver.h"
#include "tests/tree_model.h"

namespace radixkv::testing {

template <typename Source>
class RuntimeDriver {
 public:
  // With `events`, page hashes and an EventLog are on: victims must not change, and the log must
  // hold the tree's device pages after every batch.
  RuntimeDriver(std::string_view policy, uint32_t page_tokens, Source source, bool events = false)
      : pool_(KvLayout{1, 1, 4, 2, page_tokens}, kCapacity),
        events_(events ? std::make_unique<EventLog>(page_tokens, pool_, pool_) : nullptr),
        runtime_(pool_, RuntimeConfig{0, kHighWatermark, kLowWatermark, std::string(policy)},
                 TierConfig::with_events(events_.get())),
        oracle_(page_tokens),
        model_(policy, page_tokens),
        source_(std::move(source)),
        P_(page_tokens) {
    for (int s = 0; s < 3; ++s) {
      std::vector<TokenId> stem(size_t{P_} * (next() % 4) + next() % P_);
      for (TokenId& t : stem) t = static_cast<TokenId>(next() % 1000) + 10;
      stems_.push_back(stem);
    }
  }

  void run(int operations) {
    for (int op = 1; op <= operations && source_.has_more(); ++op) {
      step();
      if (op % 200 == 0) check_all();
    }
    while (!live_.empty()) end(0, /*finish=*/true);
    check_all();
    expect(runtime_.check_accounting() == 0, "pages stay private after every sequence ended");
  }

  const RuntimeStats& stats() const { return runtime_.stats(); }
  const TreeModel& model() const { return model_; }

 private:
  static constexpr uint32_t kCapacity = 32;
  static constexpr size_t kMaxLive = 6;
  // The runtime's budget is the whole pool with these watermarks: above floor(32 * 0.9) = 28
  // cached pages, it evicts down to floor(32 * 0.7) = 22.
  static constexpr double kHighWatermark = 0.9;
  static constexpr double kLowWatermark = 0.7;
  static constexpr auto kHighPages = static_cast<uint64_t>(kCapacity * kHighWatermark);
  static constexpr auto kLowPages = static_cast<uint64_t>(kCapacity * kLowWatermark);
  static_assert(kHighPages == 28 && kLowPages == 22);

  struct Live {
    SeqHandle seq;
    Namespace ns;
    int32_t priority;
    std::vector<TokenId> tokens;
    uint32_t computed;
    uint32_t locked_pages;  // the path the runtime keeps locked for it
  };

  uint64_t next() { return source_(); }
  int uniform(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }

  // Checks that the last call evicted exactly the model's `predicted` victims, and applies that to
  // the oracle after checking it was allowed.
  void sync_evictions(const std::vector<TreeModel::Victim>& predicted) {
    const std::set<PageId> gone = oracle_.gone_from(runtime_.tree());
    const std::string mismatch = TreeModel::compare(predicted, gone);
    expect(mismatch.empty(), mismatch);
    const std::string problem = oracle_.apply_eviction(gone);
    expect(problem.empty(), problem);
    runtime_.check_accounting();
  }

  // What the runtime evicts after commit, finish and abort: down to the low watermark once cached
  // pages are above the high one.
  std::vector<TreeModel::Victim> watermark_victims() {
    const uint64_t cached = model_.cached_pages();
    return model_.evict(cached > kHighPages ? cached - kLowPages : 0);
  }

  // What allocating `n` pages evicts: the shortfall of free pages, as far as it can.
  std::vector<TreeModel::Victim> allocation_victims(uint32_t n, uint32_t free_pages) {
    return model_.evict(n > free_pages ? n - free_pages : 0);
  }

  void admit() {
    const Namespace ns = uniform(8) == 0 ? 1 : 0;
    std::vector<TokenId> prompt = stems_[uniform(static_cast<int>(stems_.size()))];
    // Now and then a prompt longer than the whole pool, which must be refused as too large.
    const int tail =
        uniform(50) == 0 ? static_cast<int>(kCapacity * P_) : uniform(8 * static_cast<int>(P_));
    for (int i = 0, n = 1 + tail; i < n; ++i) {
      prompt.push_back(uniform(3));
    }
    // A priority that varies with the prompt, drawing no choice (so that a seed makes the same
    // calls as before priorities were passed).
    const auto priority = 25 * static_cast<int32_t>(prompt.size() % 5);
    const size_t cut = (prompt.size() - 1) / P_ * P_;
    const uint32_t expected_pages =
        oracle_.match_pages(ns, std::span<const TokenId>(prompt).first(cut));
    const auto total = static_cast<uint32_t>((prompt.size() + P_ - 1) / P_);
    // Provisionally pin the match, as admit does before it allocates.
    oracle_.lock(ns, prompt, expected_pages, +1);
    const uint32_t free_pages = pool_.free_pages();
    const bool expect_ok = free_pages + oracle_.unlocked() >= total - expected_pages;
    const AdmitResult r = runtime_.admit({0, ns, prompt, priority});
    std::vector<TreeModel::Victim> victims;
    if (total > kCapacity) {
      expect(r.status == RuntimeStatus::kTooLarge, "a prompt larger than the pool is kTooLarge");
    } else {
      expect(r.ok() == expect_ok, "admit succeeds exactly when free + evictable pages suffice");
      // Match (touching the path even when refused), pin the match, allocate the rest.
      const std::span<const TokenId> key = std::span<const TokenId>(prompt).first(cut);
      expect(model_.match(ns, key, {priority, now_}) == expected_pages,
             "the model matches what the oracle does");
      model_.lock(ns, prompt, expected_pages);
      victims = allocation_victims(total - expected_pages, free_pages);
      if (!r.ok()) model_.unlock(ns, prompt, expected_pages);
    }
    if (!r.ok()) {
      oracle_.lock(ns, prompt, expected_pages, -1);
      sync_evictions(victims);
      return;
    }
    oracle_.touch(ns, prompt, expected_pages);
    expect(r.reused_tokens == expected_pages * P_, "admit reuses the oracle's cached prefix");
    expect(r.position_offset == r.reused_tokens, "the position offset is the reused tokens");
    expect(r.block_table.size() == total, "the block table covers the prompt");
    live_.push_back({r.seq, ns, priority, prompt, r.reused_tokens, expected_pages});
    sync_evictions(victims);
  }

  // Mirrors insert_computed(): the computed full pages enter the cache and the lock moves there.
  // `block_table` is the sequence's as it was before the call: the pages new to the cache are
  // its own either way.
  void mirror_insert(Live& l, std::span<const PageId> block_table) {
    const uint32_t full = l.computed / P_;
    if (full <= l.locked_pages) return;
    const std::span<const TokenId> key(l.tokens.data(), size_t{full} * P_);
    oracle_.insert(l.ns, key, block_table.first(full));
    oracle_.lock(l.ns, key, full, +1);
    oracle_.lock(l.ns, l.tokens, l.locked_pages, -1);
    model_.insert(l.ns, key, block_table.first(full), {l.priority, now_});
    model_.lock(l.ns, key, full);
    model_.unlock(l.ns, l.tokens, l.locked_pages);
    l.locked_pages = full;
  }

  void commit(Live& l) {
    const auto n = static_cast<uint32_t>(
        l.computed + uniform(static_cast<int>(l.tokens.size() - l.computed) + 1));
    runtime_.commit(l.seq, n);
    l.computed = n;
    const SequenceView view = runtime_.view(l.seq);
    mirror_insert(l, view.block_table);
    sync_evictions(watermark_victims());
  }

  void decode(Live& l) {
    if (l.computed < l.tokens.size()) {  // the model runs what it has not run yet, then samples
      l.computed = static_cast<uint32_t>(l.tokens.size());
      runtime_.mark_computed(l.seq, l.computed);
    }
    const bool needs_page = l.tokens.size() % P_ == 0;
    const uint32_t free_pages = pool_.free_pages();
    const bool expect_ok = !needs_page || free_pages + oracle_.unlocked() >= 1;
    const TokenId token = uniform(3);
    const ExtendResult r = runtime_.append_token(l.seq, token);
    expect(r.ok() == expect_ok, "decode gets a page exactly when one can be had");
    expect(r.new_page == (needs_page && r.ok()), "a page is added only when the last is full");
    if (r.ok()) l.tokens.push_back(token);
    sync_evictions(allocation_victims(needs_page ? 1 : 0, free_pages));
  }

  void end(size_t i, bool finish) {
    Live& l = live_[i];
    if (finish) {
      const SequenceView view = runtime_.view(l.seq);
      const std::vector<PageId> block_table(view.block_table.begin(), view.block_table.end());
      runtime_.finish(l.seq);
      mirror_insert(l, block_table);
    } else {
      runtime_.abort(l.seq);
    }
    oracle_.lock(l.ns, l.tokens, l.locked_pages, -1);
    model_.unlock(l.ns, l.tokens, l.locked_pages);
    sync_evictions(watermark_victims());
    bool refused = false;
    try {
      runtime_.finish(l.seq);
    } catch (const std::logic_error&) {
      refused = true;
    }
    expect(refused, "a second finish is refused");
    live_[i] = std::move(live_.back());
    live_.pop_back();
  }

  void step() {
    now_ += 0.25;  // the caller's clock
    runtime_.set_now(now_);
    const int dice = uniform(100);
    if (dice < 30 || live_.empty()) {
      if (live_.size() < kMaxLive) admit();
      return;
    }
    const size_t i = uniform(static_cast<int>(live_.size()));
    if (dice < 50) {
      commit(live_[i]);
    } else if (dice < 75) {
      decode(live_[i]);
    } else if (dice < 90) {
      end(i, /*finish=*/true);
    } else if (dice < 95) {
      end(i, /*finish=*/false);
    } else {
      const uint64_t n = 1 + uniform(4);
      const std::vector<TreeModel::Victim> victims = model_.evict(n);
      runtime_.evict(n);
      sync_evictions(victims);
    }
  }

  void check_all() {
    runtime_.tree().verify();
    if (events_) {
      std::vector<PageHash> trie = runtime_.tree().tier_page_hashes(Tier::kDevice);
      std::sort(trie.begin(), trie.end());
      expect(events_->sorted(Tier::kDevice) == trie, "the event log holds the tree's pages");
    }
    runtime_.check_accounting();
    const std::string difference = oracle_.differences(runtime_.tree());
    expect(difference.empty(), difference);
    expect_same_shape(runtime_.tree(), model_);
  }

  PagePool pool_;
  std::unique_ptr<EventLog> events_;
  PrefixCacheRuntime runtime_;
  PageOracle oracle_;
  TreeModel model_;
  Source source_;
  uint32_t P_;
  std::vector<std::vector<TokenId>> stems_;
  std::vector<Live> live_;
  double now_ = 0.0;
};

}  // namespace radixkv::testing
