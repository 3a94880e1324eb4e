// ShardsMrc: a live miss-ratio curve of LRU over page keys, by spatially hashed sampling of reuse
// distances (SHARDS: C. A. Waldspurger, N. Park, A. Garthwaite and I. Ahmad, "Efficient MRC
// Construction with SHARDS", USENIX FAST 2015).
//
// Input: a stream of requests, each the keys of its prompt's full pages, root first (a chained
// hash per page: metrics/prompt_mrc.h). Output: how many of those page accesses an LRU cache of C
// pages would have hit, for each C of a fixed list.
//
// LRU stack model. A page's reuse distance is the number of distinct pages touched since its last
// access, as of the start of the request that accesses it again (all of a request's distances
// are read before any of its pages moves). An LRU cache of C pages holds exactly the C most
// recent pages (the stack property), so an access hits at every C above its distance. Within a
// request the pages are stacked root last: a page is always more recent than its descendants, as a
// parent in a radix tree whose eviction takes leaf tails is at least as recent as its children. In
// that order this model is exactly cache-mode replay with policy lru (docs/metrics.md, "The
// miss-ratio curve"; tests/test_mrc_replay.cpp checks it at rate 1 against the replay on every
// sample trace).
//
// Sampling (SHARDS). A key is tracked only if its value (key ^ SplitMix64(seed)) >> 1 is at most a
// threshold: rate R = (threshold + 1) / 2^63 (keys are uniform 64-bit hashes). Distances count
// tracked keys only (metrics/recency_index.h) and are scaled by 1/R: an access misses at C when
// its distance >= R x C. Each sampled miss weighs 1/R, and the hits at C are all page accesses
// (counted exactly) minus the weighted misses: the paper's SHARDS_adj correction
// (the expected minus the actual number of samples added to the first bucket), written as a
// Horvitz-Thompson estimate of the misses.
//
// Fixed size. Only distances below the largest capacity C_max matter: a key deeper than R x C_max
// in the stack misses at every capacity when it comes back, exactly as an untracked key does, so
// it is dropped (the least recent first). The index thus never holds more than ceil(R x C_max)
// keys, and the rate is R = min(config.rate, max_keys / C_max), fixed at construction: the most
// samples max_keys allows at every capacity. (SHARDS's own fixed-size variant instead lowers the
// threshold as distinct keys arrive; over a long run, most of those are pages never seen again,
// which this window does not spend the budget on.)
//
// Memory: every array is allocated at construction: memory_bytes() ==
// RecencyIndex::memory_bound(window_keys()) <= memory_bound(max_keys), about 32 bytes a key:
// 518 KiB at the default 16,384 keys (tests/test_metrics_mrc.cpp asserts <= 1 MiB).
// Cost per page: an xor, a shift and a compare; per sampled page two table probes and a few dozen
// additions in L1 (metrics/recency_index.h).
// Single-owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "metrics/recency_index.h"

namespace radixkv::metrics {

struct ShardsConfig {
  static constexpr double kDefaultRate = 1.0;
  static constexpr uint32_t kDefaultMaxKeys = 16384;
  static constexpr std::size_t kMaxCapacities = 16;

  double rate = kDefaultRate;           // the highest sampling rate, in (0, 1]
  uint32_t max_keys = kDefaultMaxKeys;  // most keys tracked, at least 1
  uint64_t seed = 0;                    // salt of the sampling hash
  // The cache sizes to answer for, in pages: strictly ascending, 1 to kMaxCapacities of them.
  std::vector<uint64_t> capacities_pages;

  // Throws std::invalid_argument naming the field and why.
  void validate() const;
};

class ShardsMrc {
 public:
  // Throws std::invalid_argument for a bad config (ShardsConfig::validate()).
  explicit ShardsMrc(ShardsConfig config);

  // One request: the keys of its prompt's full pages, root first.
  void access(std::span<const uint64_t> page_keys);

  const std::vector<uint64_t>& capacities_pages() const { return config_.capacities_pages; }
  // Page accesses so far, all of them (sampled or not).
  uint64_t page_accesses() const { return page_accesses_; }
  // The estimated LRU hits among them at capacities_pages()[i], in [0, page_accesses()].
  double hit_pages(std::size_t i) const;
  double rate() const { return rate_; }
  uint32_t window_keys() const { return index_.max_keys(); }
  uint32_t tracked_keys() const { return index_.size(); }
  uint64_t sampled_accesses() const { return sampled_accesses_; }

  std::size_t memory_bytes() const { return index_.memory_bytes(); }
  // The most a ShardsMrc with `max_keys` allocates.
  static std::size_t memory_bound(uint32_t max_keys) {
    return RecencyIndex::memory_bound(max_keys);
  }

 private:
  // The access at `distance` (tracked keys more recent; nullopt: untracked) misses at every
  // capacity i with distance >= R x capacities[i]; records its weight 1/R.
  void record(std::optional<uint64_t> distance);

  ShardsConfig config_;
  uint64_t mask_;                          // SplitMix64(seed)
  uint64_t threshold_;                     // a key is sampled when its value is at most this
  double rate_;                            // (threshold_ + 1) / 2^63
  double weight_;                          // 1 / rate_
  std::vector<double> scaled_capacities_;  // rate_ x capacities_pages
  // bucket_weight_[b]: the weight of the sampled accesses that miss at exactly the first b
  // capacities (b == capacities: at every one, as every first access does).
  std::vector<double> bucket_weight_;
  RecencyIndex index_;
  uint64_t page_accesses_ = 0;
  uint64_t sampled_accesses_ = 0;
};

}  // namespace radixkv::metrics
