// Engine mode: the trace served by a simulated engine built on the reference scheduler
// (sim/scheduler.h) and the runtime adapter, over one KV pool shared by running sequences and
// the cache (docs/design.md, "Engine mode"; docs/engine.md).
//
//   - Requests arrive at their trace arrival times on a simulated clock, in arrival order: a trace
//     whose times are not in file order is served sorted by time (stable), never in file order
//     (which would hold an early request back behind a later one and inflate its TTFT); the
//     report counts such requests (EngineResult::out_of_order). The clock advances by the cost
//     model's price of each step (tools/replay/engine_result.h), or jumps to the next arrival
//     when the engine is idle. Arrivals are queued at the start of the first step after they
//     arrive; at most `window` wait inside the scheduler, later ones wait outside in arrival order
//     (their time-to-first-token still counts from arrival). This bounds the scheduler's memory.
//   - A request's prompt is its trace prompt; its answer is output_tokens tokens of its answer
//     content, exactly the tokens a later turn's prompt repeats, so a finished turn (cached at
//     finish) is hit by the next one.
//   - Time to first token = end of the step that computed the last prompt token - arrival.
//   - A request that could never fit the pool (Scheduler::pages_needed above capacity) is an
//     error before anything runs: PoolTooSmall, naming the request and what it needs.
//   - With a host tier (EngineReplayConfig::host), every admission's copies are priced on a copy
//     engine per direction (CopyEngine): first the write-backs of the eviction that made room for
//     it (D2H), then its load (H2D); its prefill starts in the first step that begins once they
//     are done (Scheduler's LoadGate), while other requests compute. Write-backs at other times
//     (commits, finishes, decode) occupy the D2H engine without delaying anyone. When every
//     running request waits for copies and nothing arrives sooner, the clock jumps to the first
//     copy done. A request whose device hits another one is still loading waits for that load
//     (the runtime's copier is instant, so the clock keeps each device page's last load).
//   - With a remote tier (EngineReplayConfig::remote), admit looks up the pages after the local
//     match there, synchronously, as the runtime does: the scheduler's thread waits for the store,
//     so the wall time those lookups take (RemoteTierStats::load_wait_ns) is added to the
//     simulated clock of the step that made them. Remote hits count as hits (and remote hits); the
//     tier is drained before the result is read. The baselines run without it. Each request is
//     prefetched (PrefixCacheRuntime::prefetch) when it is queued: with the tier's prefetch on,
//     its lookup runs on the tier's reader thread meanwhile.
//   - At the end the run checks, with no live sequence: check_accounting() (refcounts, the
//     identity capacity = free + cached + private, tree.verify()), then destroys the runtime and
//     counts every page not back on the free list as leaked.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "kv_store/kv_layout.h"
#include "sim/scheduler.h"
#include "tools/replay/host_tier.h"
#include "tools/replay/replay_result.h"
#include "tools/trace/trace.h"

namespace radixkv::remote {
class RemoteTier;
}

namespace radixkv::tools {

struct EngineReplayConfig {
  KvLayout layout;
  std::string model;           // name of the layout preset, for the report
  uint64_t pool_pages = 0;     // the KV pool, shared by running sequences and the cache
  std::string policy = "lru";  // eviction policy (make_policy)
  // The runtime's watermarks over the pool, fractions or sizes (eviction/cache_budget.h).
  Watermark high_watermark = 0.95;
  Watermark low_watermark = 0.85;
  std::string schedule = "lpm";  // SchedulerConfig::from_schedule
  SchedulerConfig scheduler;     // policy fields are overwritten from `schedule`
  CostModel cost;
  uint32_t window = 4096;        // requests waiting inside the scheduler at most
  bool compare_no_cache = true;  // also run with caching off and report it side by side
  bool no_cache = false;         // run only with caching off
  // A host tier under the pool (tools/replay/host_tier.h), its copies priced on a copy engine
  // that overlaps compute; compare_no_cache then also runs without it (EngineResult::device_only).
  HostTierReplayConfig host;
  // The remote tier under the cache (not owned; above); nullptr: none.
  remote::RemoteTier* remote = nullptr;
  // The replayed cache's tier events (radix/tier_events.h, e.g. an events::EventBatcher): every
  // change of its pages, one flush per runtime call; nullptr: none. Must outlive the replay.
  TierEvents* events = nullptr;
  // Both for the run the report describes only, not for its baselines.
  // Called with the tree once the run is over, before it is torn down (its final pages).
  std::function<void(const RadixTree&)> at_end;
  // Called every few thousand requests finished and once at the end: (finished, total).
  std::function<void(std::size_t, std::size_t)> progress;
};

// The pool cannot hold one of the trace's requests.
class PoolTooSmall : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Throws PoolTooSmall, or std::invalid_argument for a bad policy, schedule or pool size.
ReplayResult replay_engine(const Trace& trace, const EngineReplayConfig& config);

}  // namespace radixkv::tools
