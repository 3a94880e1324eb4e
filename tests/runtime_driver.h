// RuntimeDriver: random sequences of runtime-adapter calls (admit, chunked commit, decode, finish,
// abort, double finish, evict) checked against PageOracle, driven by any source of choices: a
// seeded generator in test_property.cpp, the fuzzer's bytes in tests/fuzz_cache.cpp.
//
// After every call: the tokens admit reused equal the oracle's longest cached prefix of the prompt
// cut below its last token; admit and decode succeed exactly when free plus evictable pages cover
// what they need; whatever was evicted was evictable; and PrefixCacheRuntime::check_accounting()
// holds (every refcount equals the tree's reference plus the live block tables'). After every
// batch, verify() and the whole cached set against the oracle. A disagreement throws
// PropertyFailure.
#pragma once

#include <vector>

#include "runtime/prefix_cache_runtime.h"
#include "tests/page_oracle.h"
#include "tests/property_driver.h"

namespace radixkv::testing {

template <typename Source>
class RuntimeDriver {
 public:
  RuntimeDriver(std::string_view policy, uint32_t page_tokens, Source source)
      : pool_(KvLayout{1, 1, 4, 2, page_tokens}, kCapacity),
        runtime_(pool_, RuntimeConfig{0, 0.9, 0.7, std::string(policy)}),
        oracle_(page_tokens),
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

 private:
  static constexpr uint32_t kCapacity = 32;
  static constexpr size_t kMaxLive = 6;

  struct Live {
    SeqHandle seq;
    Namespace ns;
    std::vector<TokenId> tokens;
    uint32_t computed;
    uint32_t locked_pages;  // the path the runtime keeps locked for it
  };

  uint64_t next() { return source_(); }
  int uniform(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }

  // Applies what the last call evicted to the oracle, after checking it was allowed.
  void sync_evictions() {
    const std::string problem = oracle_.apply_eviction(oracle_.gone_from(runtime_.tree()));
    expect(problem.empty(), problem);
    runtime_.check_accounting();
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
    const size_t cut = (prompt.size() - 1) / P_ * P_;
    const uint32_t expected_pages =
        oracle_.match_pages(ns, std::span<const TokenId>(prompt).first(cut));
    const auto total = static_cast<uint32_t>((prompt.size() + P_ - 1) / P_);
    // Provisionally pin the match, as admit does before it allocates.
    oracle_.lock(ns, prompt, expected_pages, +1);
    const bool expect_ok = pool_.free_pages() + oracle_.unlocked() >= total - expected_pages;
    const AdmitResult r = runtime_.admit({0, ns, prompt, kDefaultPriority});
    if (total > kCapacity) {
      expect(r.status == RuntimeStatus::kTooLarge, "a prompt larger than the pool is kTooLarge");
    } else {
      expect(r.ok() == expect_ok, "admit succeeds exactly when free + evictable pages suffice");
    }
    if (!r.ok()) {
      oracle_.lock(ns, prompt, expected_pages, -1);
      sync_evictions();
      return;
    }
    oracle_.touch(ns, prompt, expected_pages);
    expect(r.reused_tokens == expected_pages * P_, "admit reuses the oracle's cached prefix");
    expect(r.position_offset == r.reused_tokens, "the position offset is the reused tokens");
    expect(r.block_table.size() == total, "the block table covers the prompt");
    live_.push_back({r.seq, ns, prompt, r.reused_tokens, expected_pages});
    sync_evictions();
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
    l.locked_pages = full;
  }

  void commit(Live& l) {
    const auto n = static_cast<uint32_t>(
        l.computed + uniform(static_cast<int>(l.tokens.size() - l.computed) + 1));
    runtime_.commit(l.seq, n);
    l.computed = n;
    const SequenceView view = runtime_.view(l.seq);
    mirror_insert(l, view.block_table);
    sync_evictions();
  }

  void decode(Live& l) {
    if (l.computed < l.tokens.size()) {  // the model runs what it has not run yet, then samples
      l.computed = static_cast<uint32_t>(l.tokens.size());
      runtime_.mark_computed(l.seq, l.computed);
    }
    const bool needs_page = l.tokens.size() % P_ == 0;
    const bool expect_ok = !needs_page || pool_.free_pages() + oracle_.unlocked() >= 1;
    const TokenId token = uniform(3);
    const ExtendResult r = runtime_.append_token(l.seq, token);
    expect(r.ok() == expect_ok, "decode gets a page exactly when one can be had");
    expect(r.new_page == (needs_page && r.ok()), "a page is added only when the last is full");
    if (r.ok()) l.tokens.push_back(token);
    sync_evictions();
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
    sync_evictions();
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
      runtime_.evict(1 + uniform(4));
      sync_evictions();
    }
  }

  void check_all() {
    runtime_.tree().verify();
    runtime_.check_accounting();
    const std::string difference = oracle_.differences(runtime_.tree());
    expect(difference.empty(), difference);
  }

  PagePool pool_;
  PrefixCacheRuntime runtime_;
  PageOracle oracle_;
  Source source_;
  uint32_t P_;
  std::vector<std::vector<TokenId>> stems_;
  std::vector<Live> live_;
};

}  // namespace radixkv::testing
