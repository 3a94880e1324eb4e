#include "runtime/shared_runtime.h"

#include <array>

#include <fmt/format.h>

#include <stdexcept>

namespace radixkv {

struct SharedRuntime::Shard {
  Shard(PagePool& whole, uint32_t pages, const RuntimeConfig& config, TierEvents* events)
      : size{pages, config.cache_bytes},
        pool(whole, pages),
        runtime(pool, config, TierConfig::with_events(events)) {}
  const ShardSize size;
  mutable std::mutex mutex;
  PagePool pool;  // a partition of the shared pool
  PrefixCacheRuntime runtime;
};

SharedRuntime::SharedRuntime(PagePool& pool, uint32_t shards, const RuntimeConfig& config,
                             const std::vector<TierEvents*>& shard_events) {
  make_shards(pool, shards, config, shard_events);
}

SharedRuntime::SharedRuntime(const KvLayout& layout, uint32_t capacity_pages, uint32_t shards,
                             const RuntimeConfig& config,
                             const std::vector<TierEvents*>& shard_events)
    : own_pool_(std::make_unique<PagePool>(layout, capacity_pages)) {
  make_shards(*own_pool_, shards, config, shard_events);
}

void SharedRuntime::make_shards(PagePool& whole, uint32_t shards, const RuntimeConfig& config,
                                const std::vector<TierEvents*>& shard_events) {
  const uint32_t capacity_pages = whole.capacity_pages();
  if (shards == 0) throw std::invalid_argument("SharedRuntime: shards must be at least 1");
  if (!shard_events.empty() && shard_events.size() != shards) {
    throw std::invalid_argument(fmt::format(
        "SharedRuntime: {} tier event observers for {} shards (give one per shard, or none)",
        shard_events.size(), shards));
  }
  if (capacity_pages / shards == 0) {
    throw std::invalid_argument(fmt::format(
        "SharedRuntime: {} pages cannot give each of {} shards a page", capacity_pages, shards));
  }
  RuntimeConfig shard_config = config;
  for (uint32_t i = 0; i < shards; ++i) {
    // The first shards take the remainder, so the shards add up to the whole capacity.
    const uint32_t pages = capacity_pages / shards + (i < capacity_pages % shards ? 1 : 0);
    // The budget is split in proportion to pages (cache_bytes * pages / capacity_pages, written
    // so that it cannot overflow); a share of 0 would silently mean the shard's whole pool.
    shard_config.cache_bytes = config.cache_bytes / capacity_pages * pages +
                               config.cache_bytes % capacity_pages * pages / capacity_pages;
    if (config.cache_bytes != 0 && shard_config.cache_bytes == 0) {
      throw std::invalid_argument(
          fmt::format("SharedRuntime: a cache budget of {} bytes split over {} shards leaves "
                      "shard {} nothing",
                      config.cache_bytes, shards, i));
    }
    shards_.push_back(std::make_unique<Shard>(whole, pages, shard_config,
                                              shard_events.empty() ? nullptr : shard_events[i]));
  }
}

SharedRuntime::~SharedRuntime() = default;

uint32_t SharedRuntime::shard_of(Namespace ns) const {
  // A multiplicative hash: tenants numbered 0, 1, 2, ... still spread evenly.
  return static_cast<uint32_t>(((ns + 1) * 0x9E3779B97F4A7C15ull >> 32) % shards_.size());
}

SharedRuntime::ShardSize SharedRuntime::shard_size(uint32_t shard) const {
  if (shard >= shards_.size()) {
    throw std::out_of_range(
        fmt::format("SharedRuntime::shard_size: shard {} of {}", shard, shards_.size()));
  }
  return shards_[shard]->size;  // const after construction: no lock needed
}

SharedRuntime::Shard& SharedRuntime::shard(SharedHandle handle, const char* operation) const {
  if (handle.shard >= shards_.size()) {
    throw std::logic_error(fmt::format("SharedRuntime::{}: handle names shard {} of {}", operation,
                                       handle.shard, shards_.size()));
  }
  return *shards_[handle.shard];
}

SharedAdmit SharedRuntime::admit(const Request& request) {
  const uint32_t index = shard_of(request.name_space);
  Shard& s = *shards_[index];
  std::lock_guard lock(s.mutex);
  const AdmitResult r = s.runtime.admit(request);
  SharedAdmit out{r.status, {index, r.seq}, r.reused_tokens, r.position_offset, {}};
  if (r.ok()) out.block_table.assign(r.block_table.begin(), r.block_table.end());
  return out;
}

ExtendResult SharedRuntime::append_token(SharedHandle handle, TokenId token) {
  Shard& s = shard(handle, "append_token");
  std::lock_guard lock(s.mutex);
  return s.runtime.append_token(handle.seq, token);
}

CommitResult SharedRuntime::commit(SharedHandle handle, uint32_t computed_tokens) {
  Shard& s = shard(handle, "commit");
  std::lock_guard lock(s.mutex);
  return s.runtime.commit(handle.seq, computed_tokens);
}

CommitResult SharedRuntime::finish(SharedHandle handle) {
  Shard& s = shard(handle, "finish");
  std::lock_guard lock(s.mutex);
  return s.runtime.finish(handle.seq);
}

void SharedRuntime::abort(SharedHandle handle) {
  Shard& s = shard(handle, "abort");
  std::lock_guard lock(s.mutex);
  s.runtime.abort(handle.seq);
}

uint64_t SharedRuntime::check() const {
  uint64_t private_pages = 0;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    private_pages += s->runtime.check_accounting();  // verifies the tree too
  }
  return private_pages;
}

// Every field of RuntimeStats, summed: a field added there must be added here (the size check
// below fails until it is).
static_assert(sizeof(RuntimeStats) == 22 * sizeof(uint64_t),
              "RuntimeStats changed: sum the new field in SharedRuntime::stats()");

RuntimeStats SharedRuntime::stats() const {
  RuntimeStats sum;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    const RuntimeStats& r = s->runtime.stats();
    for (auto [to, from] : std::array<std::pair<uint64_t*, uint64_t>, 22>{{
             {&sum.admits, r.admits},
             {&sum.admit_no_space, r.admit_no_space},
             {&sum.admit_too_large, r.admit_too_large},
             {&sum.extend_no_space, r.extend_no_space},
             {&sum.finishes, r.finishes},
             {&sum.aborts, r.aborts},
             {&sum.prompt_tokens, r.prompt_tokens},
             {&sum.reused_tokens, r.reused_tokens},
             {&sum.device_hit_tokens, r.device_hit_tokens},
             {&sum.host_hit_tokens, r.host_hit_tokens},
             {&sum.remote_hit_tokens, r.remote_hit_tokens},
             {&sum.prefill_tokens, r.prefill_tokens},
             {&sum.decode_tokens, r.decode_tokens},
             {&sum.committed_pages, r.committed_pages},
             {&sum.duplicate_pages, r.duplicate_pages},
             {&sum.evicted_pages, r.evicted_pages},
             {&sum.uncached_pages, r.uncached_pages},
             {&sum.peak_cached_pages, r.peak_cached_pages},
             {&sum.remote_no_staging, r.remote_no_staging},
             {&sum.partial_hit_tokens, r.partial_hit_tokens},
             {&sum.holds, r.holds},
             {&sum.releases, r.releases},
         }}) {
      *to += from;
    }
  }
  return sum;
}

RuntimeMetrics SharedRuntime::metrics() const {
  RuntimeMetrics sum;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    sum.merge(s->runtime.metrics());
  }
  return sum;
}

void SharedRuntime::time_calls(uint32_t every) {
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    s->runtime.time_calls(every);
  }
}

void SharedRuntime::start_miss_ratio_curve(const metrics::ShardsConfig& config) {
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    s->runtime.start_miss_ratio_curve(config);
  }
}

void SharedRuntime::write_metrics(std::ostream& out) const {
  radixkv::write_metrics(out, metrics());
}

uint64_t SharedRuntime::cached_pages() const {
  uint64_t pages = 0;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    pages += s->runtime.cached_pages();
  }
  return pages;
}

std::vector<PageHash> SharedRuntime::tier_page_hashes(Tier tier) const {
  std::vector<PageHash> hashes;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    if (!s->runtime.tree().page_hashes()) continue;
    const std::vector<PageHash> shard = s->runtime.tree().tier_page_hashes(tier);
    hashes.insert(hashes.end(), shard.begin(), shard.end());
  }
  return hashes;
}

}  // namespace radixkv
