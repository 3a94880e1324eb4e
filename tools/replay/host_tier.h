// The host tier in a replay (docs/tiers.md): what configures it, what the report adds, and the
// simulated copy engine that prices its copies in engine mode.
//
// Both modes keep the host pool on the accounting backend: no bytes move, the copier is instant
// and synchronous (kv_store/page_copier.h). Cache mode needs no time at all; engine mode prices
// each copy on its own clock (CopyEngine below), so the copier's own speed never shows.
//
// Host pool room: the pool holds the host budget plus the largest request's pages. A load's host
// pages stay pinned until the device has room for them, so a swap needs one spare buffer
// (docs/tiers.md, "An exclusive LRU hierarchy"); the budget, the number the report states, is what
// caches pages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kv_store/page_pool.h"
#include "radix/radix_tree.h"
#include "runtime/prefix_cache_runtime.h"

namespace radixkv::tools {

// PCIe Gen5 x16 is 63 GB/s per direction (32 GT/s x 16 lanes, 128b/130b encoding); large DMA
// copies from pinned memory reach about 80 % of it. docs/tiers.md, "What the host tier costs".
constexpr double kDefaultCopyGbps = 50.0;

struct HostTierReplayConfig {
  uint64_t capacity_pages = 0;  // the host budget; 0: no host tier
  std::string policy = "lru";   // a make_policy() spec
  std::string write_policy = "write_back";
  double high_watermark = 1.0;  // fractions of capacity_pages (HostTierConfig)
  double low_watermark = 1.0;
  double h2d_gbps = kDefaultCopyGbps;  // engine mode: host -> device (loads)
  double d2h_gbps = kDefaultCopyGbps;  // engine mode: device -> host (writes)
  bool enabled() const { return capacity_pages > 0; }
  // Throws std::invalid_argument naming the setting: a bad policy or write policy, watermarks
  // outside 0 < low <= high <= 1, a bandwidth that is not positive.
  void validate() const;
};

// What a replay with a host tier adds to its report (ReplayResult::host).
struct HostTierResult {
  bool enabled = false;
  uint64_t capacity_pages = 0;
  uint64_t high_watermark_pages = 0, low_watermark_pages = 0;
  std::string policy, write_policy;
  uint64_t device_hit_tokens = 0;  // of the hit tokens: on the device when matched
  uint64_t host_hit_tokens = 0;    // of the hit tokens: loaded from the host
  uint64_t loaded_pages = 0;       // host -> device copies
  uint64_t written_pages = 0;      // device -> host copies
  uint64_t host_evictions = 0;     // host pages the host policy evicted
  uint64_t dropped_pages = 0;      // pages that left the trie from the device
  uint64_t skipped_writes = 0;     // write-through copies the host had no room for
  uint64_t peak_cached_pages = 0, final_cached_pages = 0;  // host pages cached
  // The tree's counters after a run.
  void add_tree_stats(const TreeStats& stats);
};

// The pages of one host tier: its pool (accounting backend) with room for one load beyond the
// budget, and the copier between it and the device pool.
struct HostTierPages {
  HostTierPages(const PagePool& device, uint64_t budget_pages, uint64_t load_room_pages);
  uint64_t budget_pages;
  std::unique_ptr<PagePool> pool;
  std::unique_ptr<PageCopier> copier;
};

// The runtime's tiers for a replay: the host tier on `pages` as `host` sets it up (none when
// `pages` is nullptr), the remote tier (nullptr: none) and one observer (nullptr: none).
TierConfig replay_tiers(const HostTierReplayConfig& host, HostTierPages* pages, RemotePages* remote,
                        TierEvents* events);

// The copy engines of engine mode, one per direction (PCIe is full duplex): each runs its copies
// one after another, and a copy takes pages x bytes per page / bandwidth. Compute overlaps both.
//   write(now, n): n device pages evicted to the host at `now` (write-back); returns when they
//                  are on the host. The D2H engine is busy until then.
//   load(start, n): n host pages loaded once `start` has passed (after the writes that freed the
//                  device pages they go to); returns when they are on the device.
// With n = 0 each returns its time argument and changes nothing.
class CopyEngine {
 public:
  CopyEngine(uint64_t bytes_per_page, double h2d_gbps, double d2h_gbps);
  double write(double now, uint64_t pages);
  double load(double start, uint64_t pages);
  double d2h_busy_until() const { return d2h_free_; }
  double h2d_busy_until() const { return h2d_free_; }

 private:
  double h2d_s_per_page_, d2h_s_per_page_;
  double h2d_free_ = 0, d2h_free_ = 0;
};

}  // namespace radixkv::tools
