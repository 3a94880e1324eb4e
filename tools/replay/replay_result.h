// What a replay reports, whichever mode produced it (cache mode here; engine mode fills the same
// struct). The report printers (replay_report.h) read only this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kv_store/kv_layout.h"
#include "runtime/runtime_metrics.h"
#include "tools/replay/cluster_result.h"
#include "tools/replay/engine_result.h"
#include "tools/replay/host_tier.h"
#include "tools/replay/latency.h"
#include "tools/trace/trace.h"
#include "tools/trace/units.h"

namespace radixkv::remote {
class RemoteTier;
}
namespace radixkv::disk {
class DiskTier;
}

namespace radixkv::tools {

// The remote tier's part of a replay (--remote); `store` empty when there was none.
struct RemoteReplayResult {
  std::string store;              // where, credentials masked
  std::string write;              // when pages are written: "back" or "through"
  uint64_t hit_tokens = 0;        // prompt tokens loaded from the remote tier (in hit_tokens too)
  uint64_t loaded_pages = 0;      // pages loaded from it
  uint64_t stored_pages = 0;      // pages the store took
  uint64_t dropped_writes = 0;    // pages not written (queue full, store down or full)
  uint64_t errors = 0;            // store calls that failed
  uint64_t unavailable = 0;       // calls skipped while the store waited out its reconnect backoff
  std::string first_error;        // the first failure's message; empty without one
  bool never_answered = false;    // calls failed and none succeeded: the run had no remote tier
  uint64_t bad_values = 0;        // values whose header did not match: misses, never served
  std::string prefetch;           // the prefetch policy ("off": none)
  uint64_t prefetched_pages = 0;  // pages load() took from a prefetch (checked like the others)
  uint64_t prefetch_dropped = 0;  // prefetches dropped: the reader thread's queue was full
};

// The remote part of a replay's result, once `tier`'s writer has sent what it holds (drain()):
// its counters, and `hit_tokens` the replay counted.
RemoteReplayResult remote_replay_result(remote::RemoteTier& tier, uint64_t hit_tokens);

// The disk tier's part of a replay (--disk-path); `path` empty when there was none.
struct DiskReplayResult {
  std::string path;  // where, with the I/O engine and mode (DiskTier::describe())
  std::string policy, write_policy;
  uint64_t capacity_bytes = 0;
  uint64_t slots = 0;              // pages the capacity holds
  uint64_t hit_tokens = 0;         // prompt tokens loaded from the disk tier (in hit_tokens too)
  uint64_t loaded_pages = 0;       // pages loaded from it
  uint64_t written_pages = 0;      // pages written to it
  uint64_t evictions = 0;          // pages its policy evicted to make room
  uint64_t unreachable_pages = 0;  // pages reclaimed by the prefix rule (docs/tiers.md)
  uint64_t bad_pages = 0;          // slots that did not check out: misses, never served
  uint64_t recovered_pages = 0;    // pages found on the path when the run began
  double recovery_seconds = 0;     // the scan that found them
  double read_gbps = 0, write_gbps = 0;  // engine mode: the drive's bandwidths that priced it
};

// The disk part of a replay's result, once `tier` has written what it queued (drain()): its
// counters, and `hit_tokens` the replay counted.
DiskReplayResult disk_replay_result(disk::DiskTier& tier, uint64_t hit_tokens);

// One namespace named by a quota (cache mode, --quota), or every other namespace together.
struct NamespaceResult {
  std::optional<uint64_t> name_space;     // none: every namespace without a quota
  uint64_t min_pages = 0, max_pages = 0;  // the quota in pages (others: 0 and the budget)
  uint64_t requests = 0, input_tokens = 0, hit_tokens = 0;
  uint64_t final_cached_pages = 0;
  // The fewest pages it held after any request once it first held its min (none: it never did):
  // the floor the quota kept.
  std::optional<uint64_t> lowest_after_min;
  double hit_rate() const {
    return input_tokens == 0 ? 0.0
                             : static_cast<double>(hit_tokens) / static_cast<double>(input_tokens);
  }
};

struct ReplayResult {
  // What ran.
  std::string mode;    // "cache", "engine" or "cluster"
  std::string policy;  // eviction policy name
  std::string trace;   // the trace's source
  std::string model;   // the KV layout preset that converts tokens to bytes
  uint32_t page_tokens = 0;
  uint64_t capacity_pages = 0;
  uint64_t bytes_per_page = 0;
  // Cached pages above high are evicted down to low (eviction/cache_budget.h).
  uint64_t high_watermark_pages = 0;
  uint64_t low_watermark_pages = 0;
  uint64_t skipped_records = 0;  // malformed trace records skipped under --skip-bad

  // Workload and outcome.
  uint64_t requests = 0;
  uint64_t input_tokens = 0;
  uint64_t hit_tokens = 0;  // prompt tokens served from the cache
  // With partial-page reuse (cache mode, --partial-reuse): of hit_tokens, those copied from part
  // of a cached page; unset when it is off.
  std::optional<uint64_t> partial_hit_tokens;
  uint64_t inserted_pages = 0;  // pages newly cached
  uint64_t uncached_pages = 0;  // full pages left out because nothing was evictable
  uint64_t evicted_pages = 0;   // the unit of eviction is the page
  uint64_t evicted_nodes = 0;   // leaves removed once their last page went
  uint64_t peak_cached_pages = 0;
  uint64_t final_cached_pages = 0;
  uint64_t pages_leaked = 0;     // must be 0
  std::string accounting_error;  // empty when the identity and tree.verify() held

  // Speed of the cache itself (trace reading excluded).
  double wall_seconds = 0;   // the replay loop, token expansion included
  double cache_seconds = 0;  // time inside admit + finish
  LatencySummary admit;      // match, lock, allocate (evicting as needed)
  LatencySummary finish;     // insert, unlock, release

  HostTierResult host;        // with a host tier only (host.enabled)
  RemoteReplayResult remote;  // with a remote tier: hit_tokens counts its hits too
  DiskReplayResult disk;      // with a disk tier: hit_tokens counts its hits too
  // With --quota: each quota namespace's figures, then the other namespaces' together.
  std::vector<NamespaceResult> namespaces;
  // Batches of KV events handed to the publisher (--kv-events); unset when not publishing.
  std::optional<uint64_t> kv_events_published;

  EngineResult engine;    // engine mode only: schedule, cost model, TTFT, throughput, no-cache run
  ClusterResult cluster;  // cluster mode only: routing, per-worker results, TTFT, balance
  // With --mrc (or --metrics-listen): the run's live miss-ratio curve at its end (docs/metrics.md).
  std::optional<MissRatioCurve> mrc;

  double hit_rate() const {
    return input_tokens == 0 ? 0.0
                             : static_cast<double>(hit_tokens) / static_cast<double>(input_tokens);
  }
  // Sizes are products of counts and bytes: checked (std::overflow_error past 2^64), never
  // wrapped.
  uint64_t capacity_tokens() const { return checked_mul(capacity_pages, page_tokens, "capacity"); }
  uint64_t capacity_bytes() const { return pages_bytes(capacity_pages, "capacity"); }
  uint64_t bytes_per_token() const { return page_tokens == 0 ? 0 : bytes_per_page / page_tokens; }
  uint64_t hit_bytes() const { return checked_mul(hit_tokens, bytes_per_token(), "reused KV"); }
  uint64_t peak_cached_bytes() const { return pages_bytes(peak_cached_pages, "peak cached"); }
  uint64_t pages_bytes(uint64_t pages, std::string_view what) const {
    return checked_mul(pages, bytes_per_page, what);
  }
  double requests_per_second() const {
    return wall_seconds > 0 ? static_cast<double>(requests) / wall_seconds : 0.0;
  }
  bool ok() const { return pages_leaked == 0 && accounting_error.empty(); }
};

// A result with what ran and the workload filled in, the same way in every mode: the mode, the
// policy as the report should name it, the trace's source, skipped records, request count and
// prompt tokens, and the layout's page size. The mode's run fills the outcome and the speed.
ReplayResult start_replay_result(std::string mode, std::string policy, const Trace& trace,
                                 std::string model, const KvLayout& layout,
                                 uint64_t capacity_pages);

}  // namespace radixkv::tools
