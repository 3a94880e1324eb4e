// SharedRuntime: the thread-safe front for a service where several scheduler threads share one
// cache.
//
// What is thread-safe in radixkv, and what is not:
//   - PagePool, RadixTree, the policies, BudgetedAllocator and PrefixCacheRuntime are NOT: each
//     assumes one owner at a time (a scheduler thread, or a caller holding a lock).
//   - SharedRuntime IS: every call may come from any thread. It splits namespaces over `shards`
//     independent PrefixCacheRuntimes, each with its own mutex and its own partition of one
//     PagePool (kv_store/page_pool.h): capacity / shards pages, one more for each of the first
//     capacity % shards shards, and a share of config.cache_bytes in proportion to its pages
//     (shard_size() says both). Page ids are the pool's, unique across shards, so block tables
//     address the pool's real pages (host or GPU memory) directly. The partitions share no
//     mutable state, so the shards' page allocation needs no lock beyond each shard's own.
//     Namespaces never share nodes, so splitting them loses no hit; what is lost is that free
//     pages cannot move from one shard to another.
//     shards == 1 is the plain locked design: one mutex in front of one runtime.
//   - Results are copied out under the shard's lock (block tables included), so nothing a caller
//     holds points into state another thread may change.
// A handle names its shard; using it after finish/abort throws std::logic_error as the runtime
// does.
//
// Tier events (radix/tier_events.h): one observer per shard (`shard_events[i]` for shard i, or
// none at all), called only under that shard's lock, so an observer that is not thread-safe
// (events/event_batcher.h's EventBatcher) needs no lock of its own, and each shard's batches come
// out in that shard's call order, one per call. Why not one observer for all shards: it would need
// a lock around every page's event, and two shards' calls would mix their events in one batch. The
// shards' batchers may share one thread-safe sink (a ZmqEventPublisher): the shards' pages are
// disjoint (namespaces never share pages, and the hash covers the namespace), so interleaving
// their batches changes nothing a consumer rebuilds. (A shard never reports cleared():
// SharedRuntime has no clear.)
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <vector>

#include "runtime/prefix_cache_runtime.h"

namespace radixkv {

struct SharedHandle {
  uint32_t shard = 0;
  SeqHandle seq;
};

struct SharedAdmit {
  RuntimeStatus status = RuntimeStatus::kOk;
  SharedHandle handle;
  uint32_t reused_tokens = 0;
  uint32_t position_offset = 0;
  std::vector<PageId> block_table;  // a copy, taken under the lock
  bool ok() const noexcept { return status == RuntimeStatus::kOk; }
};

class SharedRuntime {
 public:
  // Over the caller's pool, which must outlive the runtime and have no page in use; the shards
  // take all of it. Throws std::invalid_argument when shards is 0, the pool cannot give each
  // shard a page, or a nonzero cache budget cannot give each shard at least a page;
  // std::logic_error when the pool is in use (claimed by a runtime, or pages held or lent).
  // `shard_events` is empty or names one observer per shard (std::invalid_argument otherwise),
  // each outliving the runtime.
  SharedRuntime(PagePool& pool, uint32_t shards, const RuntimeConfig& config = {},
                const std::vector<TierEvents*>& shard_events = {});
  // The same over a pool of its own with no page bytes (AccountingBackend): replays, benchmarks.
  SharedRuntime(const KvLayout& layout, uint32_t capacity_pages, uint32_t shards,
                const RuntimeConfig& config = {},
                const std::vector<TierEvents*>& shard_events = {});
  ~SharedRuntime();
  SharedRuntime(const SharedRuntime&) = delete;
  SharedRuntime& operator=(const SharedRuntime&) = delete;

  uint32_t shards() const noexcept { return static_cast<uint32_t>(shards_.size()); }
  uint32_t shard_of(Namespace ns) const;
  // What one shard was given at construction: pages of the pool (the first capacity % shards
  // shards hold one more, so the shards add up to the capacity) and its share of cache_bytes
  // (in proportion to its pages, rounded down; 0 when the budget is the whole pool). Throws
  // std::out_of_range for a shard that does not exist.
  struct ShardSize {
    uint32_t pages = 0;
    uint64_t cache_bytes = 0;
  };
  ShardSize shard_size(uint32_t shard) const;

  SharedAdmit admit(const Request& request);
  ExtendResult append_token(SharedHandle handle, TokenId token);
  CommitResult commit(SharedHandle handle, uint32_t computed_tokens);
  CommitResult finish(SharedHandle handle);
  void abort(SharedHandle handle);

  // Per shard, under its lock: the runtime's accounting check and the tree's verify(). Returns the
  // private pages summed over shards.
  uint64_t check() const;
  // Every field summed over shards. peak_cached_pages is the sum of the shards' peaks: each
  // shard's own, over its partition; an upper bound of the peak of their sum.
  RuntimeStats stats() const;
  // What an engine exports (runtime/runtime_metrics.h), each shard's under its lock, merged: one
  // exposition for the whole runtime; the live curve's sizes are the shards' summed.
  RuntimeMetrics metrics() const;
  // PrefixCacheRuntime::time_calls on every shard.
  void time_calls(uint32_t every);
  // PrefixCacheRuntime::start_miss_ratio_curve on every shard (each over its own size).
  void start_miss_ratio_curve(const metrics::ShardsConfig& config = {});
  void write_metrics(std::ostream& out) const;
  uint64_t cached_pages() const;
  // Every cached page's hash on `tier`, over all shards (each under its lock; page hashes are on
  // only with tier events): a whole-tree walk, for tests.
  std::vector<PageHash> tier_page_hashes(Tier tier) const;

 private:
  struct Shard;
  Shard& shard(SharedHandle handle, const char* operation) const;
  void make_shards(PagePool& pool, uint32_t shards, const RuntimeConfig& config,
                   const std::vector<TierEvents*>& shard_events);

  std::unique_ptr<PagePool> own_pool_;  // only with the layout constructor; outlives the shards
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace radixkv
