// Cache mode: the replay that published hit-rate curves use (docs/design.md, "Cache mode").
//
// It drives the tree through the runtime (runtime/prefix_cache_runtime.h), as every caller does:
// each request is one admit in AdmitMode::kCacheOnly, whose pages count as computed at once, and
// one finish, so tiers, observers and the budget behave as they do in engine mode.
// Requests run in trace order, one at a time, with no concurrency and no decode:
//   1. m = leading pages already cached (RadixTree::match); hit tokens += m * page_tokens. The
//      matched path is touched and locked.
//   2. The remaining full pages of the prompt are cached in order, each needing one page. When
//      the pool is empty, one page is evicted from the tail of the policy's victim leaf; when
//      nothing is evictable, the rest of the prompt is not cached. (Allocating the k pages first,
//      evicting k - free pages at once, then inserting the longest prefix that got pages, is the
//      same as page-by-page: the request's new pages are not yet in the tree, so they can never
//      be the victim, and each eviction picks the policy's victim just as k single calls would.)
//   3. Unlock.
//   4. Watermarks: if cached pages now exceed the high watermark, the policy evicts down to the
//      low one (what the runtime does at finish, eviction/cache_budget.h). The default, high =
//      low = 1.0, never triggers: eviction is then only the on-demand eviction of step 2, page by
//      page, as published hit-rate curves replay. A lower pair keeps headroom (the high one) and
//      evicts in batches (down to the low one), as an engine with a budget does.
// With a host tier (CacheReplayConfig::host) step 1's match is a device run, then a host run;
// step 2 first takes device pages for the host run (evicting as it does for new pages: under
// write-back, to the host) and loads it, then caches the new pages. Hit tokens count both runs
// (HostTierResult splits them). The host tier's own watermarks apply after step 4. With LRU on
// both tiers and write-back this caches exactly what one LRU cache of both sizes caches
// (docs/tiers.md; tests/test_replay_tiers.cpp).
// Hit rate = hit tokens / input tokens over the whole trace. Answers are not cached here (engine
// mode caches them); a partial last page is never cached.
//
// A capacity above the trace's total prompt pages replays with a pool of that total (the same
// result; no eviction can happen either way), so huge capacities cost no memory. A prompt is
// expanded only as far as the pool could ever hold: a match never reaches past it, nor does what
// one request caches, so a prompt longer than the cache costs no more than the cache.
// With a remote tier (config.remote), the tree tells it of every page it drops (written to the
// store by its writer thread), and step 2 first asks the store for the pages that follow the
// match: the leading run it holds counts as hit tokens (and remote hit tokens) and is cached
// locally like computed pages (with a host tier, through its staging pages, as the runtime loads
// them: runtime/remote_staging.h). The remote tier is drained before the result is read.
// With a disk tier (config.disk) the same, the disk tier asked first and the remote tier for the
// rest of the run (runtime/lower_tiers.h); its hits count as hit tokens and disk hit tokens.
// At the end the page accounting identity (capacity = free + cached, no private pages) and
// tree.verify() are checked once, the tree is destroyed, and every page not back on the free list
// counts as leaked. A violation is reported in the result (ReplayResult::ok()), not thrown.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eviction/eviction_policy.h"
#include "eviction/quota_policy.h"
#include "kv_store/kv_layout.h"
#include "radix/radix_tree.h"
#include "tools/replay/host_tier.h"
#include "tools/replay/replay_result.h"
#include "tools/trace/trace.h"

namespace radixkv::remote {
class RemoteTier;
}
namespace radixkv::disk {
class DiskTier;
}

namespace radixkv::tools {

struct CacheReplayConfig {
  KvLayout layout;              // page_tokens and bytes per page
  std::string model;            // name of the layout preset, for the report
  uint64_t capacity_pages = 0;  // the cache's pool; at least 1
  std::string policy = "lru";   // built with make_policy() unless policy_factory is set
  // Of capacity_pages, fractions or sizes (step 4 above; eviction/cache_budget.h's rule).
  Watermark high_watermark = 1.0;
  Watermark low_watermark = 1.0;
  // Builds the policy instead of make_policy(policy): for policies that need the whole trace
  // (an offline optimum) before the replay starts.
  std::function<std::unique_ptr<EvictionPolicy>(const Trace&)> policy_factory;
  // Called with each request's index (trace order) before it runs: how an offline policy that
  // knows the future (tools/replay/belady_policy.h) learns where the replay stands.
  std::function<void(std::size_t)> before_request;
  // Partial-page reuse (RuntimeConfig::partial_reuse): ReplayResult::partial_hit_tokens.
  bool partial_reuse = false;
  // Tenant quotas (RuntimeConfig::quotas): ReplayResult::namespaces gives each one's figures.
  std::vector<NamespaceQuota> quotas{};
  // --hints online: the runtime gets a retention layer (RuntimeConfig::retention) and each
  // session's path is held between its requests by the online rule of
  // tools/replay/session_hints.h, from the gaps seen so far. Off: no layer.
  bool hints_online = false;
  // A host tier under the cache (tools/replay/host_tier.h): off unless its capacity is set.
  HostTierReplayConfig host;
  // The remote tier under the cache (not owned); nullptr: none.
  remote::RemoteTier* remote = nullptr;
  // The disk tier under the cache, above the remote tier (not owned); nullptr: none.
  disk::DiskTier* disk = nullptr;
  // An observer of the replayed cache's tier events (radix/tier_events.h, e.g. an
  // events::EventBatcher), told after the remote tier: every change of its pages, one flush per
  // request; nullptr: none. Must outlive the replay.
  TierEvents* events = nullptr;
  // Called with the tree once the run is over, before it is torn down (its final pages).
  std::function<void(const RadixTree&)> at_end;
  // Keep the runtime's live miss-ratio curve (PrefixCacheRuntime::start_miss_ratio_curve) and
  // report it (ReplayResult::mrc).
  bool miss_ratio_curve = false;
  // Called every 256 requests and once at the end: (requests done, total).
  std::function<void(std::size_t, std::size_t)> progress;
};

ReplayResult replay_cache(const Trace& trace, const CacheReplayConfig& config);

// What a replay is expected to cost, to start a sweep's longest cells first
// (tools/replay/parallel_cells.h): the pages its cache can hold, device and host tier, each cut to
// the trace's prompt pages as the replay cuts them. A larger cache builds a larger tree, which
// takes longer to build, check and tear down (a smaller one evicts more, but eviction costs less
// per page than caching did).
uint64_t expected_cell_work(const Trace& trace, const CacheReplayConfig& config);

// About the most heap a replay's tree can take: the pages its cache can hold, cut to the trace's
// prompt pages, times what the tree keeps per page (the page's tokens and id, and a share of a
// node with its child slots). Far above what a trace with much repetition caches; meant for
// heap::reserve, which faults memory in only as it is used.
uint64_t tree_bytes_bound(const Trace& trace, const CacheReplayConfig& config);

}  // namespace radixkv::tools
