// TierDriver: random runtime calls (admit with loads, chunked commit, decode, finish, abort, evict)
// on a PrefixCacheRuntime with a host tier, checked after every call against
//   - TierOracle (tests/tier_oracle.h), when both tiers run LRU: admit succeeds exactly when free
//     plus evictable device pages cover what it needs, reuses the oracle's device and host runs,
//     and afterwards the device pages (with their ids) and the host pages are exactly the
//     oracle's, so every victim of either tier was the oracle's. (Under write_through_selective
//     the copies a lock makes depend on node boundaries, which the oracle does not have: those
//     runs, and runs with other policies, get every check below but this one);
//   - an EventLog consumer of the tier events: what it holds per tier after applying them is the
//     trie's page set per tier, every stored page's hash chains from its parent, dropping() comes
//     while the page is still held, and each call sends exactly one flush();
//   - check_accounting() (both identities), and verify() every batch.
// At the end every sequence ends, the runtime is destroyed, and both pools must be wholly free.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/prefix_cache_runtime.h"
#include "tests/event_log.h"
#include "tests/property_driver.h"
#include "tests/test_copier.h"
#include "tests/tier_oracle.h"

namespace radixkv::testing {

struct TierRunConfig {
  std::string write = "write_back";
  std::string device_policy = "lru";
  std::string host_policy = "lru";
  double host_high = 1.0, host_low = 1.0;
  // Both pools are partitions whose ids do not start at 0 (as a SharedRuntime shard's), so the
  // tree's per-page arrays must count from the pool's first id.
  bool partitioned = false;
};

struct TierRunStats {
  RuntimeStats runtime;
  TreeStats tree;
  uint64_t events = 0, droppings = 0, oracle_checks = 0;
};

template <typename Source>
class TierDriver {
 public:
  TierDriver(const TierRunConfig& config, uint32_t page_tokens, Source source)
      : layout_{1, 1, 4, 2, page_tokens},
        pool_(make_pool(kDevicePages, config.partitioned, device_parts_)),
        host_(make_pool(kHostPoolPages, config.partitioned, host_parts_)),
        events_(page_tokens, pool_, host_),
        exact_(config.device_policy == "lru" && config.host_policy == "lru" &&
               WritePolicy::parse(config.write).mode != WritePolicy::Mode::kWriteThroughSelective),
        oracle_(page_tokens, WritePolicy::parse(config.write), host_budget(config)),
        source_(std::move(source)),
        P_(page_tokens) {
    TierConfig tiers;
    tiers.host = {&host_,           &copier_,        kHostBudgetPages * host_.bytes_per_page(),
                  config.host_high, config.host_low, config.host_policy,
                  config.write};
    tiers.events = {&events_};
    runtime_ = std::make_unique<PrefixCacheRuntime>(
        pool_, RuntimeConfig{0, kHighWatermark, kLowWatermark, config.device_policy}, tiers);
    for (int s = 0; s < 3; ++s) {
      std::vector<TokenId> stem(size_t{P_} * (next() % 4) + next() % P_);
      for (TokenId& t : stem) t = static_cast<TokenId>(next() % 1000) + 10;
      stems_.push_back(stem);
    }
  }

  TierRunStats run(int operations) {
    for (int op = 1; op <= operations && source_.has_more(); ++op) {
      step();
      if (op % 100 == 0) runtime_->tree().verify();
    }
    while (!live_.empty()) end(0, true);
    runtime_->tree().verify();
    expect(runtime_->check_accounting() == 0, "pages stay private after every sequence ended");
    TierRunStats stats{runtime_->stats(), runtime_->tree().stats(), events_.events(),
                       events_.droppings(), oracle_checks_};
    runtime_.reset();
    expect(pool_.free_pages() == pool_.capacity_pages(), "no device page leaks");
    expect(host_.free_pages() == host_.capacity_pages(), "no host page leaks");
    return stats;
  }

 private:
  static constexpr uint32_t kDevicePages = 32;
  static constexpr uint32_t kHostBudgetPages = 20;
  static constexpr uint32_t kHostPoolPages = 24;  // room beyond the budget for loads
  static constexpr size_t kMaxLive = 5;
  static constexpr double kHighWatermark = 0.9;
  static constexpr double kLowWatermark = 0.7;
  static constexpr auto kHighPages = static_cast<uint64_t>(kDevicePages * kHighWatermark);
  static constexpr auto kLowPages = static_cast<uint64_t>(kDevicePages * kLowWatermark);

  struct Live {
    SeqHandle seq;
    Namespace ns;
    std::vector<TokenId> tokens;
    uint32_t computed;
    uint32_t locked_pages;
  };

  TierOracle::Budget host_budget(const TierRunConfig& config) const {
    const CacheBudget budget(
        {kHostBudgetPages * host_.bytes_per_page(), config.host_high, config.host_low},
        host_.bytes_per_page());
    return {std::min<uint64_t>(budget.limit_pages(), kHostPoolPages), kHostPoolPages,
            budget.high_pages(), budget.low_pages()};
  }

  uint64_t next() { return source_(); }
  int uniform(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }

  // After every call: one flush, the event consumer's view, the accounting, and the oracle.
  void after_call() {
    ++calls_;
    expect(events_.flushes() == calls_, "each runtime call sends exactly one flush()");
    for (Tier tier : {Tier::kDevice, Tier::kHost}) {
      std::vector<PageHash> trie = runtime_->tree().tier_page_hashes(tier);
      std::sort(trie.begin(), trie.end());
      expect(events_.sorted(tier) == trie,
             fmt::format("the event consumer holds the trie's {} pages", to_string(tier)));
    }
    runtime_->check_accounting();
    if (exact_) compare_with_oracle();
  }

  std::vector<PageHash> sorted_hashes(Tier tier) const {
    std::vector<PageHash> hashes = runtime_->tree().tier_page_hashes(tier);
    std::sort(hashes.begin(), hashes.end());
    return hashes;
  }

  void compare_with_oracle() {
    if (oracle_.tie()) return;  // the order is not determined: stop comparing
    ++oracle_checks_;
    expect(sorted_hashes(Tier::kDevice) == oracle_.tier_hashes(true),
           "the device pages are the oracle's");
    expect(sorted_hashes(Tier::kHost) == oracle_.tier_hashes(false),
           "the host pages are the oracle's");
    // Device ids along every cached path.
    for (const auto& [key, page] : oracle_.pages()) {
      std::vector<PageId> got;
      const uint32_t cached = runtime_->tree().peek(key.first, key.second, &got);
      expect(cached == key.second.size(), "a page of the oracle is cached");
      const uint32_t run = oracle_.device_run(key.first, key.second);
      expect(got == oracle_.device_ids(key.first, key.second, run),
             "the device ids of a path are the oracle's");
    }
  }

  void admit() {
    const Namespace ns = uniform(8) == 0 ? 1 : 0;
    std::vector<TokenId> prompt = stems_[uniform(static_cast<int>(stems_.size()))];
    const int tail = uniform(8 * static_cast<int>(P_));
    for (int i = 0, n = 1 + tail; i < n; ++i) prompt.push_back(uniform(3));
    const size_t cut = (prompt.size() - 1) / P_ * P_;
    const std::span<const TokenId> key = std::span<const TokenId>(prompt).first(cut);
    const uint32_t matched = oracle_.cached(ns, key);
    const uint32_t device = oracle_.device_run(ns, key);
    const auto total = static_cast<uint32_t>((prompt.size() + P_ - 1) / P_);
    const uint32_t need = total - device;
    const uint32_t free_pages = pool_.free_pages();
    oracle_.touch(ns, key, matched);
    oracle_.lock(ns, key, matched, +1);
    const bool expect_ok = free_pages + oracle_.device_evictable() >= need;
    const AdmitResult r = runtime_->admit({0, ns, prompt, kDefaultPriority});
    if (exact_) {
      expect(r.ok() == expect_ok, "admit succeeds exactly when free + evictable pages suffice");
    }
    if (exact_) oracle_.evict_device(need > free_pages ? need - free_pages : 0);
    if (!r.ok()) {
      oracle_.lock(ns, key, matched, -1);
      if (exact_) oracle_.enforce_host_watermarks();
      after_call();
      return;
    }
    if (exact_) {
      expect(r.device_hit_tokens == device * P_, "admit's device run is the oracle's");
      expect(r.host_hit_tokens == (matched - device) * P_, "admit's host run is the oracle's");
      oracle_.load(ns, key, device, r.block_table.subspan(device, matched - device));
      oracle_.enforce_host_watermarks();
    }
    expect(r.position_offset == r.device_hit_tokens + r.host_hit_tokens,
           "the offset is device + host hits");
    runtime_->wait_load(r.load_ticket);
    live_.push_back({r.seq, ns, prompt, r.reused_tokens, r.reused_tokens / P_});
    after_call();
  }

  // Mirrors insert_computed() in the oracle: the computed full pages are cached, the lock moves.
  void mirror_insert(Live& l, std::span<const PageId> block_table) {
    const uint32_t full = l.computed / P_;
    if (full <= l.locked_pages) return;
    const std::span<const TokenId> key(l.tokens.data(), size_t{full} * P_);
    const uint32_t taken = oracle_.insert(l.ns, key, block_table.first(full));
    oracle_.lock(l.ns, key, full, +1);
    oracle_.lock(l.ns, l.tokens, l.locked_pages, -1);
    l.locked_pages = full;
    if (taken > 0) evict_watermark();
  }

  void evict_watermark() {
    const uint64_t cached = oracle_.device_pages();
    if (cached > kHighPages) oracle_.evict_device(cached - kLowPages);
  }

  void commit(Live& l) {
    const auto n = static_cast<uint32_t>(
        l.computed + uniform(static_cast<int>(l.tokens.size() - l.computed) + 1));
    const SequenceView before = runtime_->view(l.seq);
    const std::vector<PageId> table(before.block_table.begin(), before.block_table.end());
    runtime_->commit(l.seq, n);
    l.computed = n;
    if (exact_) {
      mirror_insert(l, table);
      oracle_.enforce_host_watermarks();
    }
    after_call();
  }

  void decode(Live& l) {
    if (l.computed < l.tokens.size()) {
      l.computed = static_cast<uint32_t>(l.tokens.size());
      runtime_->mark_computed(l.seq, l.computed);
    }
    const bool needs_page = l.tokens.size() % P_ == 0;
    const uint32_t free_pages = pool_.free_pages();
    const TokenId token = uniform(3);
    const ExtendResult r = runtime_->append_token(l.seq, token);
    if (exact_) {
      expect(r.ok() == (!needs_page || free_pages + oracle_.device_evictable() >= 1),
             "decode gets a page exactly when one can be had");
      if (needs_page && free_pages == 0) oracle_.evict_device(1);
      oracle_.enforce_host_watermarks();
    }
    if (r.ok()) l.tokens.push_back(token);
    after_call();
  }

  void end(size_t i, bool finish) {
    Live& l = live_[i];
    if (finish) {
      const SequenceView before = runtime_->view(l.seq);
      const std::vector<PageId> table(before.block_table.begin(), before.block_table.end());
      runtime_->finish(l.seq);
      if (exact_) {
        const uint32_t full = l.computed / P_;
        if (full > l.locked_pages) {
          const std::span<const TokenId> key(l.tokens.data(), size_t{full} * P_);
          oracle_.insert(l.ns, key, std::span<const PageId>(table).first(full));
          oracle_.lock(l.ns, key, full, +1);
          oracle_.lock(l.ns, l.tokens, l.locked_pages, -1);
          l.locked_pages = full;
        }
      }
    } else {
      runtime_->abort(l.seq);
    }
    if (exact_) {
      oracle_.lock(l.ns, l.tokens, l.locked_pages, -1);
      evict_watermark();
      oracle_.enforce_host_watermarks();
    }
    live_[i] = std::move(live_.back());
    live_.pop_back();
    after_call();
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
    } else if (dice < 72) {
      decode(live_[i]);
    } else if (dice < 87) {
      end(i, true);
    } else if (dice < 92) {
      end(i, false);
    } else {
      const uint64_t n = 1 + uniform(6);
      runtime_->evict(n);
      if (exact_) {
        oracle_.evict_device(n);
        oracle_.enforce_host_watermarks();
      }
      after_call();
    }
  }

  // The pools behind pool_ and host_; partitions die before the pool they are cut from.
  struct PoolParts : std::vector<std::unique_ptr<PagePool>> {
    ~PoolParts() {
      while (!empty()) pop_back();
    }
  };
  // A pool of `pages` pages: a plain one, or the second partition of a bigger pool (parts holds
  // the pool, the first partition and the one returned, in the order they must die).
  PagePool& make_pool(uint32_t pages, bool partitioned, PoolParts& parts) {
    constexpr uint32_t kSkipped = 5;
    if (!partitioned) return *parts.emplace_back(std::make_unique<PagePool>(layout_, pages));
    PagePool& whole = *parts.emplace_back(std::make_unique<PagePool>(layout_, kSkipped + pages));
    parts.push_back(std::make_unique<PagePool>(whole, kSkipped));
    return *parts.emplace_back(std::make_unique<PagePool>(whole, pages));
  }

  KvLayout layout_;
  PoolParts device_parts_, host_parts_;
  PagePool& pool_;
  PagePool& host_;
  TestCopier copier_;
  EventLog events_;
  std::unique_ptr<PrefixCacheRuntime> runtime_;
  bool exact_;
  TierOracle oracle_;
  Source source_;
  uint32_t P_;
  std::vector<std::vector<TokenId>> stems_;
  std::vector<Live> live_;
  uint64_t calls_ = 0;
  uint64_t oracle_checks_ = 0;
};

}  // namespace radixkv::testing
