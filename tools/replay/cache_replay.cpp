#include "tools/replay/cache_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "eviction/cache_budget.h"
#include "kv_store/page_pool.h"
#include "radix/radix_tree.h"
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

}  // namespace

ReplayResult replay_cache(const Trace& trace, const CacheReplayConfig& config) {
  if (config.capacity_pages == 0 || config.capacity_pages >= kInvalidPage) {
    throw std::invalid_argument(fmt::format("cache capacity must be between 1 and {} pages, got {}",
                                            kInvalidPage - 1, config.capacity_pages));
  }
  // The cache never holds more pages than the trace's prompts have in all, so a larger capacity
  // replays exactly like that many pages: the pool is cut to size instead of allocating
  // bookkeeping for pages that could never be used (--capacity-tokens 4e9 --page-tokens 1).
  uint64_t trace_pages = 0;
  for (const TraceRequest& r : trace.requests)
    trace_pages += r.input_tokens / config.layout.page_tokens;
  const uint64_t pool_pages = std::clamp<uint64_t>(trace_pages, 1, config.capacity_pages);
  PagePool pool(config.layout, static_cast<uint32_t>(pool_pages));
  const uint64_t bytes_per_page = config.layout.bytes_per_page();
  const CacheBudget budget(
      {checked_mul(config.capacity_pages, bytes_per_page, "cache capacity in bytes"),
       config.high_watermark, config.low_watermark},
      bytes_per_page);
  auto tree = std::make_unique<RadixTree>(
      pool, config.policy_factory ? config.policy_factory(trace) : make_policy(config.policy));

  // The spec as given ("gdsf:depth_pages=inf"), so that variants of one policy stay apart.
  ReplayResult result = start_replay_result(
      "cache", config.policy_factory ? std::string(tree->policy().name()) : config.policy, trace,
      config.model, config.layout, config.capacity_pages);
  result.high_watermark_pages = budget.high_pages();
  result.low_watermark_pages = budget.low_pages();

  const uint32_t page_tokens = config.layout.page_tokens;
  const std::size_t total = trace.requests.size();
  TokenExpander expander(trace);
  LatencyRecorder admit, finish;
  admit.reserve(total);
  finish.reserve(total);
  std::vector<PageId> fresh;

  const Clock::time_point start = Clock::now();
  for (std::size_t i = 0; i < total; ++i) {
    const TraceRequest& request = trace.requests[i];
    const std::span<const TokenId> tokens = expander.expand(i, pool_pages * page_tokens);
    const AccessHint hint{.priority = request.priority,
                          .now = request.arrival_s,
                          .output_tokens = request.output_tokens,
                          .request_class = request.request_class};
    if (config.before_request) config.before_request(i);
    fresh.clear();

    const Clock::time_point t0 = Clock::now();
    const MatchResult match = tree->match(request.ns, tokens, nullptr, hint);
    tree->lock(match.node);
    const uint32_t matched_pages = match.tokens / page_tokens;
    const uint32_t want = request.input_tokens / page_tokens - matched_pages;
    uint32_t got = 0;
    if (want > 0) {
      if (pool.free_pages() < want) tree->evict_pages(want - pool.free_pages());
      got = std::min(want, pool.free_pages());
      if (!pool.allocate(got, fresh)) throw std::logic_error("cache replay: free pages vanished");
    }
    const Clock::time_point t1 = Clock::now();
    if (got > 0) {
      // Below the locked match: the matched prefix is not walked a second time.
      const InsertResult inserted = tree->insert_below(
          match.node,
          tokens.subspan(size_t{matched_pages} * page_tokens, size_t{got} * page_tokens), fresh,
          hint);
      if (inserted.cached_tokens != 0) {
        throw std::logic_error(fmt::format(
            "cache replay: request {} matched {} tokens but insert found {} more cached", i,
            match.tokens, inserted.cached_tokens));
      }
      pool.release(fresh);  // the tree holds its own reference now
    }
    tree->unlock(match.node);
    result.peak_cached_pages = std::max(result.peak_cached_pages, tree->cached_pages());
    if (const uint64_t excess = budget.excess_pages(tree->cached_pages())) {
      tree->evict_pages(excess);
    }
    const Clock::time_point t2 = Clock::now();

    admit.add(t0, t1);
    finish.add(t1, t2);
    result.hit_tokens += match.tokens;
    result.inserted_pages += got;
    result.uncached_pages += want - got;
    if (config.progress && (i + 1) % 256 == 0) config.progress(i + 1, total);
  }
  result.wall_seconds = seconds_between(start, Clock::now());
  if (config.progress) config.progress(total, total);

  result.cache_seconds = admit.total_seconds() + finish.total_seconds();
  result.admit = admit.summary();
  result.finish = finish.summary();
  result.evicted_pages = tree->stats().evicted_pages;
  result.evicted_nodes = tree->stats().evicted_nodes;
  result.final_cached_pages = tree->cached_pages();
  result.accounting_error = check_accounting(pool, *tree);
  tree.reset();  // releases the tree's reference on every page it still indexes
  result.pages_leaked = pool.capacity_pages() - pool.free_pages();
  return result;
}

}  // namespace radixkv::tools
