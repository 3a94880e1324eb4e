#include "tools/replay/cache_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "eviction/cache_budget.h"
#include "kv_store/page_pool.h"
#include "radix/radix_tree.h"
#include "remote/remote_tier.h"
#include "tools/replay/host_tier.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

using Clock = LatencyRecorder::Clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The end-of-run check: the identity with no live sequence, then the tree's own invariants.
std::string check_accounting(const PagePool& pool, const RadixTree& tree) {
  try {
    if (tree.protected_pages() != 0) {
      return fmt::format("{} pages still protected after every request unlocked",
                         tree.protected_pages());
    }
    if (uint64_t{pool.free_pages()} + tree.cached_pages() != pool.capacity_pages()) {
      return fmt::format("capacity {} != free {} + cached {} with no live sequence",
                         pool.capacity_pages(), pool.free_pages(), tree.cached_pages());
    }
    tree.verify();
  } catch (const std::exception& e) {
    return fmt::format("tree.verify(): {}", e.what());
  }
  return {};
}

// The cache never holds more pages than the trace's prompts have in all, so a larger capacity
// replays exactly like that many pages: the pool is cut to size instead of allocating bookkeeping
// for pages that could never be used (--capacity-tokens 4e9 --page-tokens 1).
// The same holds for the host tier's budget.
struct TracePages {
  uint64_t total = 0;    // full prompt pages of the whole trace
  uint64_t largest = 0;  // of its longest prompt
};

TracePages trace_pages_of(const Trace& trace, uint32_t page_tokens) {
  TracePages pages;
  for (const TraceRequest& r : trace.requests) {
    pages.total += r.input_tokens / page_tokens;
    pages.largest = std::max<uint64_t>(pages.largest, r.input_tokens / page_tokens);
  }
  return pages;
}

// The pages the device cache can hold, cut to the trace's prompt pages (above).
uint64_t cacheable_pages(const Trace& trace, const CacheReplayConfig& config) {
  return std::min(config.capacity_pages, trace_pages_of(trace, config.layout.page_tokens).total);
}

uint64_t pool_pages_for(const Trace& trace, const CacheReplayConfig& config) {
  if (config.capacity_pages == 0 || config.capacity_pages >= kInvalidPage) {
    throw std::invalid_argument(fmt::format("cache capacity must be between 1 and {} pages, got {}",
                                            kInvalidPage - 1, config.capacity_pages));
  }
  config.host.validate();
  return std::max<uint64_t>(cacheable_pages(trace, config), 1);
}

// One replay: the pool, the tree over it, the budget's watermarks, and the running result.
class CacheReplayer {
 public:
  CacheReplayer(const Trace& trace, const CacheReplayConfig& config)
      : trace_(trace),
        config_(config),
        page_tokens_(config.layout.page_tokens),
        pool_(config.layout, static_cast<uint32_t>(pool_pages_for(trace, config))),
        budget_({checked_mul(config.capacity_pages, config.layout.bytes_per_page(),
                             "cache capacity in bytes"),
                 config.high_watermark, config.low_watermark},
                config.layout.bytes_per_page()),
        tree_(std::make_unique<RadixTree>(pool_, config.policy_factory
                                                     ? config.policy_factory(trace)
                                                     : make_policy(config.policy))),
        expander_(trace) {
    // The spec as given ("gdsf:depth_pages=inf"), so that variants of one policy stay apart.
    result_ = start_replay_result(
        "cache", config.policy_factory ? std::string(tree_->policy().name()) : config.policy, trace,
        config.model, config.layout, config.capacity_pages);
    result_.high_watermark_pages = budget_.high_pages();
    result_.low_watermark_pages = budget_.low_pages();
    if (config.host.enabled()) add_host_tier();
    if (config.remote != nullptr) {
      config.remote->attach_pools(&pool_, host_ ? host_->pool.get() : nullptr);
      tree_->set_tier_events(config.remote);
      result_.remote.store = config.remote->describe();
    }
    admit_.reserve(trace.requests.size());
    finish_.reserve(trace.requests.size());
    if (config.events != nullptr) tree_->set_tier_events(config.events);
  }

  ReplayResult run();

 private:
  void add_host_tier();
  uint32_t load_remote(Namespace ns, std::span<const TokenId> tokens, uint32_t matched_pages,
                       std::span<const PageId> pages);
  void replay_request(std::size_t i);
  void finish_run();

  const Trace& trace_;
  const CacheReplayConfig& config_;
  const uint32_t page_tokens_;
  PagePool pool_;
  const CacheBudget budget_;
  std::optional<HostTierPages> host_;  // before tree_, which uses it until destroyed
  std::unique_ptr<RadixTree> tree_;
  TokenExpander expander_;
  LatencyRecorder admit_, finish_;
  std::vector<PageId> fresh_;
  std::vector<PageHash> hashes_;
  ReplayResult result_;
};

// The host tier under the device pool: its budget cut to the trace's pages as the device's is,
// and pool room for the largest load (tools/replay/host_tier.h).
void CacheReplayer::add_host_tier() {
  const HostTierReplayConfig& host = config_.host;
  const TracePages pages = trace_pages_of(trace_, page_tokens_);
  const uint64_t budget_pages = std::clamp<uint64_t>(pages.total, 1, host.capacity_pages);
  host_.emplace(pool_, budget_pages, std::min<uint64_t>(pages.largest, pool_.capacity_pages()));
  HostTierSetup setup;
  setup.pool = host_->pool.get();
  setup.copier = host_->copier.get();
  setup.policy = make_policy(host.policy);
  setup.budget = {budget_pages * pool_.bytes_per_page(), host.high_watermark, host.low_watermark};
  setup.write = WritePolicy::parse(host.write_policy);
  HostTierResult& r = result_.host;
  r.enabled = true;
  r.capacity_pages = host.capacity_pages;
  r.policy = host.policy;
  r.write_policy = setup.write.to_string();
  tree_->add_host_tier(std::move(setup));
  // The watermarks of the budget as given, not as cut to the trace.
  const CacheBudget given(
      {checked_mul(host.capacity_pages, pool_.bytes_per_page(), "host capacity in bytes"),
       host.high_watermark, host.low_watermark},
      pool_.bytes_per_page());
  r.high_watermark_pages = given.high_pages();
  r.low_watermark_pages = given.low_pages();
}

// Steps 1 to 4 of cache_replay.h for request i.
void CacheReplayer::replay_request(std::size_t i) {
  const TraceRequest& request = trace_.requests[i];
  // No match, and nothing this request caches, reaches past the pool.
  const std::span<const TokenId> tokens =
      expander_.expand(i, uint64_t{pool_.capacity_pages()} * page_tokens_);
  const AccessHint hint{.priority = request.priority,
                        .now = request.arrival_s,
                        .output_tokens = request.output_tokens,
                        .request_class = request.request_class};
  if (config_.before_request) config_.before_request(i);
  fresh_.clear();

  const Clock::time_point t0 = Clock::now();
  const MatchResult match = tree_->match(request.ns, tokens, nullptr, hint);
  tree_->lock(match.node);
  const uint32_t matched_pages = match.tokens / page_tokens_;
  // With a host tier the match ends in a host run, loaded into device pages first.
  const uint32_t host_run = match.host_tokens() / page_tokens_;
  const uint32_t want = request.input_tokens / page_tokens_ - matched_pages;
  uint32_t got = 0;
  if (want + host_run > 0) {
    const uint32_t need = want + host_run;
    if (pool_.free_pages() < need) tree_->evict_pages(need - pool_.free_pages());
    // Free + evictable pages cover any prompt cut to the pool, the matched ones included.
    if (pool_.free_pages() < host_run) {
      throw std::logic_error(fmt::format("cache replay: no device room to load request {}", i));
    }
    got = std::min(want, pool_.free_pages() - host_run);
    if (!pool_.allocate(got + host_run, fresh_)) {
      throw std::logic_error("cache replay: free pages vanished");
    }
  }
  if (host_run > 0) tree_->load(match.node, std::span<const PageId>(fresh_).first(host_run));
  const uint32_t remote_pages = config_.remote != nullptr && got > 0
                                    ? load_remote(request.ns, tokens, matched_pages,
                                                  std::span<const PageId>(fresh_).subspan(host_run))
                                    : 0;
  const Clock::time_point t1 = Clock::now();
  if (got > 0) {
    // Below the locked match: the matched prefix is not walked a second time.
    const InsertResult inserted = tree_->insert_below(
        match.node,
        tokens.subspan(size_t{matched_pages} * page_tokens_, size_t{got} * page_tokens_),
        std::span<const PageId>(fresh_).subspan(host_run), hint);
    if (inserted.cached_tokens != 0) {
      throw std::logic_error(
          fmt::format("cache replay: request {} matched {} tokens but insert found {} more cached",
                      i, match.tokens, inserted.cached_tokens));
    }
  }
  pool_.release(fresh_);  // the tree holds its own reference now
  tree_->unlock(match.node);
  result_.peak_cached_pages = std::max(result_.peak_cached_pages, tree_->cached_pages());
  if (const uint64_t excess = budget_.excess_pages(tree_->cached_pages())) {
    tree_->evict_pages(excess);
  }
  if (host_) {
    tree_->enforce_host_watermarks();
    result_.host.peak_cached_pages =
        std::max(result_.host.peak_cached_pages, tree_->host_cached_pages());
    result_.host.device_hit_tokens += match.device_tokens;
    result_.host.host_hit_tokens += match.host_tokens();
  }
  admit_.add(t0, t1);
  finish_.add(t1, Clock::now());
  result_.hit_tokens += match.tokens + uint64_t{remote_pages} * page_tokens_;
  result_.remote.hit_tokens += uint64_t{remote_pages} * page_tokens_;
  result_.inserted_pages += got;
  result_.uncached_pages += want - got;
  tree_->flush_events();  // the request's changes as one batch
}

// The pages after the match that the remote tier holds, loaded into the first of `pages` (fresh
// pages for the rest of the prompt); hashes chained from the namespace's root.
uint32_t CacheReplayer::load_remote(Namespace ns, std::span<const TokenId> tokens,
                                    uint32_t matched_pages, std::span<const PageId> pages) {
  const PageHash parent =
      chain_page_hashes(ns, tokens, page_tokens_, matched_pages, pages.size(), hashes_);
  return config_.remote->load(parent, hashes_, tokens.subspan(size_t{matched_pages} * page_tokens_),
                              pool_, pages);
}

ReplayResult CacheReplayer::run() {
  const std::size_t total = trace_.requests.size();
  const Clock::time_point start = Clock::now();
  for (std::size_t i = 0; i < total; ++i) {
    replay_request(i);
    if (config_.progress && (i + 1) % 256 == 0) config_.progress(i + 1, total);
  }
  result_.wall_seconds = seconds_between(start, Clock::now());
  if (config_.progress) config_.progress(total, total);
  finish_run();
  return std::move(result_);
}

void CacheReplayer::finish_run() {
  result_.cache_seconds = admit_.total_seconds() + finish_.total_seconds();
  result_.admit = admit_.summary();
  result_.finish = finish_.summary();
  result_.evicted_pages = tree_->stats().evicted_pages;
  result_.evicted_nodes = tree_->stats().evicted_nodes;
  result_.final_cached_pages = tree_->cached_pages();
  result_.accounting_error = check_accounting(pool_, *tree_);
  if (host_) {
    result_.host.add_tree_stats(tree_->stats());
    result_.host.final_cached_pages = tree_->host_cached_pages();
    if (result_.accounting_error.empty()) result_.accounting_error = check_host_identity(*tree_);
  }
  if (config_.at_end) config_.at_end(*tree_);
  tree_.reset();  // releases the tree's reference on every page it still indexes
  result_.pages_leaked = pool_.capacity_pages() - pool_.free_pages();
  if (host_) result_.pages_leaked += host_->pool->capacity_pages() - host_->pool->free_pages();
  if (config_.remote != nullptr) {
    result_.remote = remote_replay_result(*config_.remote, result_.remote.hit_tokens);
  }
}

}  // namespace

ReplayResult replay_cache(const Trace& trace, const CacheReplayConfig& config) {
  return CacheReplayer(trace, config).run();
}

uint64_t expected_cell_work(const Trace& trace, const CacheReplayConfig& config) {
  if (config.layout.page_tokens == 0) return 0;  // the replay itself says what is wrong
  const TracePages pages = trace_pages_of(trace, config.layout.page_tokens);
  const uint64_t host_pages = config.host.enabled() ? config.host.capacity_pages : 0;
  return std::min(config.capacity_pages, pages.total) + std::min(host_pages, pages.total);
}

uint64_t tree_bytes_bound(const Trace& trace, const CacheReplayConfig& config) {
  if (config.layout.page_tokens == 0) return 0;
  constexpr uint64_t kNodeShare = 48;  // a node is ~100 bytes, and most hold several pages
  const uint64_t per_page =
      uint64_t{config.layout.page_tokens} * sizeof(TokenId) + sizeof(PageId) + kNodeShare;
  return cacheable_pages(trace, config) * per_page;
}

}  // namespace radixkv::tools
