// RuntimeMetrics: a snapshot of what a PrefixCacheRuntime (or a SharedRuntime, its shards summed)
// exports to an engine's monitoring, and its Prometheus text (docs/metrics.md lists every name,
// its unit and meaning).
//
// Counters come from RuntimeStats and the tree's TreeStats; gauges from the pools and the tree at
// the time of the snapshot; the three latency histograms and the live miss-ratio curve from the
// runtime itself. The tiers below the local ones (disk, remote) report their own counters
// (RemotePages::add_metrics), of which the runtime exports what they gained since it attached
// them; holds and quota namespaces come from the device policy's layers.
//
// Snapshots add up (merge): counters, gauges and histograms sum, and so do the curves' capacities
// and estimated hit tokens, which is exact for shards that split namespaces (each shard is an LRU
// of its own size over its own namespaces, so the whole's hits at m x its capacity are the sum of
// each shard's at m x its own).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <vector>

#include "metrics/latency_histogram.h"
#include "metrics/prompt_mrc.h"
#include "radix/radix_tree.h"
#include "runtime/remote_pages.h"

namespace radixkv {

// One point of the live curve, in summable units.
struct CurvePoint {
  double multiple = 0.0;         // of the cache's capacity (metrics::kMrcMultiples)
  uint64_t capacity_tokens = 0;  // multiple x the capacity, in tokens
  double hit_tokens = 0.0;       // estimated LRU hit tokens at that size
};

struct MissRatioCurve {
  uint64_t prompt_tokens = 0;  // every prompt token the curve was fed
  double sampling_rate = 0.0;  // the sampler's rate (the lowest over merged shards)
  uint64_t memory_bytes = 0;
  std::vector<CurvePoint> points;  // one per metrics::kMrcMultiples
  double hit_rate(std::size_t i) const {
    return prompt_tokens == 0 ? 0.0 : points[i].hit_tokens / static_cast<double>(prompt_tokens);
  }
};

// Page counts and sizes of one tier, as the snapshot found them.
struct TierGauges {
  uint64_t capacity_pages = 0;  // the tier's pool
  uint64_t budget_pages = 0;    // the cache's budget of it
  uint64_t cached_pages = 0;    // indexed by the tree
  uint64_t bytes_per_page = 0;
};

// Session holds and retention hints (RuntimeConfig::retention, eviction/retention_layer.h).
struct RetentionGauges {
  uint64_t holds = 0;     // counter: hold() calls
  uint64_t releases = 0;  // counter: release() calls
  // Gauge: evictable device pages a hold or a hint above the default priority protects now.
  uint64_t protected_pages = 0;
};

// One namespace named by RuntimeConfig::quotas (eviction/quota_policy.h), gauges in pages.
struct NamespaceGauges {
  uint64_t name_space = 0;
  uint64_t cached_pages = 0;  // device pages it holds, pinned ones included
  uint64_t min_pages = 0;
  uint64_t max_pages = 0;
};

struct RuntimeMetrics {
  uint32_t page_tokens = 0;
  // Counters.
  uint64_t admits = 0;
  uint64_t admit_no_space = 0;
  uint64_t admit_too_large = 0;
  uint64_t finishes = 0;
  uint64_t aborts = 0;
  uint64_t prompt_tokens = 0;
  uint64_t device_hit_tokens = 0;
  uint64_t host_hit_tokens = 0;
  uint64_t remote_hit_tokens = 0;  // every tier below the local ones (`lower` splits it)
  uint64_t prefill_tokens = 0;
  uint64_t decode_tokens = 0;
  uint64_t inserted_pages = 0;       // device pages the tree took
  uint64_t duplicate_pages = 0;      // computed pages the tree already had
  uint64_t evicted_pages = 0;        // device pages evicted (to the host or out)
  uint64_t host_evicted_pages = 0;   // host pages evicted
  uint64_t host_loaded_pages = 0;    // host -> device copies
  uint64_t host_written_pages = 0;   // device -> host copies
  uint64_t remote_loaded_pages = 0;  // pages loaded from the tiers below the local ones
  // Gauges.
  uint64_t live_sequences = 0;
  TierGauges device;
  std::optional<TierGauges> host;  // with a host tier
  // The tiers below the local ones that report themselves (RemotePages::add_metrics: a disk tier,
  // a remote one), in the order they are asked; counters since the runtime attached them. Their
  // loaded pages are the runtime's remote hits: a tier that does not report is counted remote.
  std::vector<LowerTierMetrics> lower;
  std::optional<RetentionGauges> retention;  // with a retention layer
  std::vector<NamespaceGauges> quotas;       // by namespace, with quotas
  // Histograms.
  metrics::LatencyHistogram admit_latency;
  metrics::LatencyHistogram commit_latency;
  metrics::LatencyHistogram finish_latency;
  std::optional<MissRatioCurve> curve;  // when the runtime keeps one (RuntimeConfig)

  // Adds `other` in (a shard of the same runtime: same page size, same curve multiples). Lower
  // tiers are matched by their label, quota namespaces by id.
  void merge(const RuntimeMetrics& other);
  // The remote hits that no reporting tier other than "remote" claims, in pages: what
  // radixkv_pages_loaded_total{tier="remote"} exports.
  uint64_t remote_only_loaded_pages() const;
};

// The Prometheus text (format 0.0.4, metrics/prometheus.h) of `m`.
void write_metrics(std::ostream& out, const RuntimeMetrics& m);

}  // namespace radixkv
