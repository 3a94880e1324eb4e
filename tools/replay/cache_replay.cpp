#include "tools/replay/cache_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "disk/disk_tier.h"
#include "eviction/cache_budget.h"
#include "kv_store/page_pool.h"
#include "remote/remote_tier.h"
#include "runtime/prefix_cache_runtime.h"
#include "tools/replay/host_tier.h"
#include "tools/replay/run_checks.h"
#include "tools/replay/session_hints.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

using Clock = LatencyRecorder::Clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
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

// The host tier's pages: its budget cut to the trace's pages as the device's is, and pool room
// for the largest load (tools/replay/host_tier.h).
std::unique_ptr<HostTierPages> host_pages_for(const Trace& trace, const CacheReplayConfig& config,
                                              const PagePool& pool) {
  if (!config.host.enabled()) return nullptr;
  const TracePages pages = trace_pages_of(trace, config.layout.page_tokens);
  return std::make_unique<HostTierPages>(
      pool, std::clamp<uint64_t>(pages.total, 1, config.host.capacity_pages),
      std::min<uint64_t>(pages.largest, pool.capacity_pages()));
}

// One replay: the pool and the runtime over it (which owns the tree, the budget and the tiers),
// and the running result.
class CacheReplayer {
 public:
  CacheReplayer(const Trace& trace, const CacheReplayConfig& config)
      : trace_(trace),
        config_(config),
        page_tokens_(config.layout.page_tokens),
        pool_(config.layout, static_cast<uint32_t>(pool_pages_for(trace, config))),
        host_(host_pages_for(trace, config, pool_)),
        runtime_(std::make_unique<PrefixCacheRuntime>(pool_, runtime_config(), tier_config())),
        expander_(trace) {
    // The spec as given ("gdsf:depth_pages=inf"), so that variants of one policy stay apart.
    result_ = start_replay_result(
        "cache",
        (config.policy_factory ? std::string(runtime_->tree().policy().name()) : config.policy) +
            (config.hints_online ? "+hints" : ""),
        trace, config.model, config.layout, config.capacity_pages);
    result_.high_watermark_pages = runtime_->budget().high_pages();
    result_.low_watermark_pages = runtime_->budget().low_pages();
    if (config.miss_ratio_curve) runtime_->start_miss_ratio_curve();
    if (host_) describe_host_tier();
    if (config.remote != nullptr) result_.remote.store = config.remote->describe();
    if (config.partial_reuse) result_.partial_hit_tokens = 0;
    if (!config.quotas.empty()) start_namespaces();
    if (config.disk != nullptr) result_.disk.path = config.disk->describe();
    admit_.reserve(trace.requests.size());
    finish_.reserve(trace.requests.size());
  }

  ReplayResult run();

 private:
  RuntimeConfig runtime_config() const;
  TierConfig tier_config();
  void describe_host_tier();
  void replay_request(std::size_t i);
  void start_namespaces();
  NamespaceResult& namespace_result(Namespace ns);
  void update_namespaces();
  std::span<const TokenRangeRetention> retention_within(std::size_t i,
                                                        std::span<const TokenId> tokens);
  void finish_run();

  const Trace& trace_;
  const CacheReplayConfig& config_;
  const uint32_t page_tokens_;
  PagePool pool_;
  std::unique_ptr<HostTierPages> host_;  // before runtime_, which uses it until destroyed
  std::unique_ptr<LowerTiers> lower_;    // with a disk and a remote tier; as host_
  std::unique_ptr<PrefixCacheRuntime> runtime_;
  TokenExpander expander_;
  LatencyRecorder admit_, finish_;
  OnlineHolds holds_;  // --hints online
  std::vector<TokenRangeRetention> cut_ranges_;
  ReplayResult result_;
};

// The budget is the capacity as given (the pool may be cut to the trace), so its watermarks are
// fractions of it.
RuntimeConfig CacheReplayer::runtime_config() const {
  RuntimeConfig runtime{
      .cache_bytes = checked_mul(config_.capacity_pages, config_.layout.bytes_per_page(),
                                 "cache capacity in bytes"),
      .high_watermark = config_.high_watermark,
      .low_watermark = config_.low_watermark,
      .partial_reuse = config_.partial_reuse,
      .quotas = config_.quotas};
  if (config_.policy_factory) {
    runtime.policy = [this] { return config_.policy_factory(trace_); };
  } else {
    runtime.policy = config_.policy;
  }
  // Hints a trace carries are honoured whatever --hints says; holds come with --hints online.
  if (config_.hints_online || !trace_.retention.empty()) runtime.retention = RetentionConfig{};
  return runtime;
}

TierConfig CacheReplayer::tier_config() {
  return replay_tiers(config_.host, host_.get(), lower_tiers(config_.disk, config_.remote, lower_),
                      config_.events);
}

// The host tier's part of the report, with the watermarks of its budget as given, not as cut to
// the trace.
void CacheReplayer::describe_host_tier() {
  const HostTierReplayConfig& host = config_.host;
  HostTierResult& r = result_.host;
  r.enabled = true;
  r.capacity_pages = host.capacity_pages;
  r.policy = host.policy;
  r.write_policy = runtime_->tree().write_policy()->to_string();
  const CacheBudget given(
      {checked_mul(host.capacity_pages, pool_.bytes_per_page(), "host capacity in bytes"),
       host.high_watermark, host.low_watermark},
      pool_.bytes_per_page());
  r.high_watermark_pages = given.high_pages();
  r.low_watermark_pages = given.low_pages();
}

// The request's retention ranges, cut to the tokens expanded (a prompt longer than the pool is
// cut, and ranges past the cut would be refused).
std::span<const TokenRangeRetention> CacheReplayer::retention_within(
    std::size_t i, std::span<const TokenId> tokens) {
  const std::span<const TokenRangeRetention> ranges = trace_.retention_of(i);
  if (tokens.size() == trace_.requests[i].input_tokens || ranges.empty()) return ranges;
  cut_ranges_.clear();
  const auto length = static_cast<uint32_t>(tokens.size());
  for (TokenRangeRetention r : ranges) {
    if (r.token_start >= length) continue;
    if (r.token_end != TokenRangeRetention::kToEnd) r.token_end = std::min(r.token_end, length);
    cut_ranges_.push_back(r);
  }
  return cut_ranges_;
}

// Steps 1 to 4 of cache_replay.h for request i: one admit of the whole pages (AdmitMode::
// kCacheOnly), whose fresh pages count as computed at once, then finish.
void CacheReplayer::replay_request(std::size_t i) {
  const TraceRequest& request = trace_.requests[i];
  // No match, and nothing this request caches, reaches past the pool.
  const std::span<const TokenId> tokens =
      expander_.expand(i, uint64_t{pool_.capacity_pages()} * page_tokens_);
  if (config_.before_request) config_.before_request(i);
  // The whole pages beyond the expansion could never be cached.
  result_.uncached_pages += (request.input_tokens - tokens.size()) / page_tokens_;
  if (tokens.empty()) return;
  runtime_->set_now(request.arrival_s);
  if (config_.hints_online)
    holds_.arrive(*runtime_, request.session, request.agent, request.arrival_s);

  const uint64_t disk_pages = config_.disk != nullptr ? config_.disk->stats().loaded_pages : 0;
  const Clock::time_point t0 = Clock::now();
  const AdmitResult admitted = runtime_->admit({.id = i,
                                                .name_space = request.ns,
                                                .prompt = tokens,
                                                .priority = request.priority,
                                                .output_tokens = request.output_tokens,
                                                .request_class = request.request_class,
                                                .session = request.session,
                                                .agent = request.agent,
                                                .mode = AdmitMode::kCacheOnly,
                                                .retention = retention_within(i, tokens)});
  // Free + evictable pages cover any prompt cut to the pool, the matched ones included.
  if (!admitted.ok()) {
    throw std::logic_error(fmt::format("cache replay: no device room to load request {}", i));
  }
  const Clock::time_point t1 = Clock::now();
  const auto pages = static_cast<uint32_t>(admitted.block_table.size());
  runtime_->mark_computed(admitted.seq, pages * page_tokens_);
  runtime_->finish(admitted.seq);
  if (config_.hints_online) holds_.finished(*runtime_, request.session, request.agent);
  admit_.add(t0, t1);
  finish_.add(t1, Clock::now());

  const uint32_t matched_pages = (admitted.device_hit_tokens + admitted.host_hit_tokens) /
                                 page_tokens_;  // local hits; remote ones were cached as new
  result_.hit_tokens += admitted.reused_tokens;
  // The tiers below come back as one run: the disk's part, then the remote's.
  const uint64_t disk_tokens =
      config_.disk != nullptr ? (config_.disk->stats().loaded_pages - disk_pages) * page_tokens_
                              : 0;
  result_.disk.hit_tokens += disk_tokens;
  result_.remote.hit_tokens += admitted.remote_hit_tokens - disk_tokens;
  if (result_.partial_hit_tokens) *result_.partial_hit_tokens += admitted.partial_hit_tokens;
  result_.inserted_pages += pages - matched_pages;
  if (!result_.namespaces.empty()) {
    NamespaceResult& n = namespace_result(request.ns);
    ++n.requests;
    n.input_tokens += request.input_tokens;
    n.hit_tokens += admitted.reused_tokens;
    update_namespaces();
  }
  result_.uncached_pages += admitted.uncached_pages;
  if (host_) {
    result_.host.peak_cached_pages =
        std::max(result_.host.peak_cached_pages, runtime_->tree().host_cached_pages());
    result_.host.device_hit_tokens += admitted.device_hit_tokens;
    result_.host.host_hit_tokens += admitted.host_hit_tokens;
  }
}

// The quota namespaces in the runtime's order (by id, in pages), then the others.
void CacheReplayer::start_namespaces() {
  const auto& policy = static_cast<const QuotaPolicy&>(runtime_->tree().policy());
  for (const QuotaPages& q : policy.quotas()) {
    NamespaceResult& n = result_.namespaces.emplace_back();
    n.name_space = q.name_space;
    n.min_pages = q.min_pages;
    n.max_pages = q.max_pages;
  }
  result_.namespaces.emplace_back().max_pages = runtime_->budget().limit_pages();
}

NamespaceResult& CacheReplayer::namespace_result(Namespace ns) {
  for (NamespaceResult& n : result_.namespaces) {
    if (n.name_space == ns) return n;
  }
  return result_.namespaces.back();
}

void CacheReplayer::update_namespaces() {
  const RadixTree& tree = runtime_->tree();
  uint64_t quota_pages = 0;
  for (NamespaceResult& n : result_.namespaces) {
    const uint64_t pages =
        n.name_space ? tree.namespace_pages(*n.name_space) : tree.cached_pages() - quota_pages;
    quota_pages += pages;
    n.final_cached_pages = pages;
    if (n.lowest_after_min || pages >= n.min_pages) {
      n.lowest_after_min = std::min(n.lowest_after_min.value_or(pages), pages);
    }
  }
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
  const RadixTree& tree = runtime_->tree();
  result_.cache_seconds = admit_.total_seconds() + finish_.total_seconds();
  result_.admit = admit_.summary();
  result_.finish = finish_.summary();
  result_.evicted_pages = tree.stats().evicted_pages;
  result_.evicted_nodes = tree.stats().evicted_nodes;
  result_.final_cached_pages = tree.cached_pages();
  result_.peak_cached_pages = runtime_->stats().peak_cached_pages;
  result_.accounting_error = check_end_of_run(*runtime_);
  result_.mrc = runtime_->metrics().curve;
  if (host_) {
    result_.host.add_tree_stats(tree.stats());
    result_.host.final_cached_pages = tree.host_cached_pages();
  }
  if (config_.at_end) config_.at_end(tree);
  runtime_.reset();  // releases the tree's reference on every page it still indexes
  result_.pages_leaked = pool_.capacity_pages() - pool_.free_pages();
  if (host_) result_.pages_leaked += host_->pool->capacity_pages() - host_->pool->free_pages();
  if (config_.remote != nullptr) {
    result_.remote = remote_replay_result(*config_.remote, result_.remote.hit_tokens);
  }
  if (config_.disk != nullptr) {
    result_.disk = disk_replay_result(*config_.disk, result_.disk.hit_tokens);
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
