#include "tools/replay/host_tier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kv_store/page_copier.h"
#include "radix/tier_config.h"

namespace radixkv::tools {

void HostTierReplayConfig::validate() const {
  if (!enabled()) return;
  if (capacity_pages >= kInvalidPage) {
    throw std::invalid_argument(fmt::format("host tier: capacity must be below {} pages, got {}",
                                            kInvalidPage, capacity_pages));
  }
  make_policy(policy);
  WritePolicy::parse(write_policy);
  if (!(low_watermark > 0 && low_watermark <= high_watermark && high_watermark <= 1)) {
    throw std::invalid_argument(fmt::format(
        "host tier: watermarks must satisfy 0 < low <= high <= 1, got high {} and low {}",
        high_watermark, low_watermark));
  }
  for (const auto& [name, gbps] : {std::pair{"h2d", h2d_gbps}, std::pair{"d2h", d2h_gbps}}) {
    if (!(gbps > 0) || !std::isfinite(gbps)) {
      throw std::invalid_argument(fmt::format(
          "host tier: {} bandwidth must be a positive number of GB/s, got {}", name, gbps));
    }
  }
}

void HostTierResult::add_tree_stats(const TreeStats& stats) {
  loaded_pages = stats.loaded_pages;
  written_pages = stats.written_pages;
  host_evictions = stats.host_evicted_pages;
  dropped_pages = stats.dropped_pages;
  skipped_writes = stats.skipped_writes;
}

HostTierPages::HostTierPages(const PagePool& device, uint64_t budget, uint64_t load_room_pages)
    : budget_pages(budget) {
  const uint64_t pages = budget_pages + load_room_pages;
  if (pages >= kInvalidPage) {
    throw std::invalid_argument(fmt::format(
        "host tier: {} budget pages plus {} for a load is more than 32-bit page ids can name",
        budget_pages, load_room_pages));
  }
  pool = std::make_unique<PagePool>(device.layout(), static_cast<uint32_t>(pages));
  copier = make_page_copier(device, *pool);
}

TierConfig replay_tiers(const HostTierReplayConfig& host, HostTierPages* pages, RemotePages* remote,
                        TierEvents* events) {
  TierConfig tiers = TierConfig::with_events(events);
  tiers.remote = remote;
  if (pages == nullptr) return tiers;
  tiers.host.pool = pages->pool.get();
  tiers.host.copier = pages->copier.get();
  tiers.host.cache_bytes = pages->budget_pages * pages->pool->bytes_per_page();
  tiers.host.high_watermark = host.high_watermark;
  tiers.host.low_watermark = host.low_watermark;
  tiers.host.policy = host.policy;
  tiers.host.write_policy = host.write_policy;
  return tiers;
}

CopyEngine::CopyEngine(uint64_t bytes_per_page, double h2d_gbps, double d2h_gbps)
    : h2d_s_per_page_(static_cast<double>(bytes_per_page) / (h2d_gbps * 1e9)),
      d2h_s_per_page_(static_cast<double>(bytes_per_page) / (d2h_gbps * 1e9)) {}

double CopyEngine::write(double now, uint64_t pages) {
  if (pages == 0) return now;
  d2h_free_ = std::max(now, d2h_free_) + d2h_s_per_page_ * static_cast<double>(pages);
  return d2h_free_;
}

double CopyEngine::load(double start, uint64_t pages) {
  if (pages == 0) return start;
  h2d_free_ = std::max(start, h2d_free_) + h2d_s_per_page_ * static_cast<double>(pages);
  return h2d_free_;
}

}  // namespace radixkv::tools
