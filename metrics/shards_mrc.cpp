#include "metrics/shards_mrc.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/splitmix64.h"

namespace radixkv::metrics {

namespace {

constexpr double kTwoTo63 = 9223372036854775808.0;
constexpr uint64_t kLargestValue = (uint64_t{1} << 63) - 1;

// A key's sampling value: 63 bits, uniform when keys are (below kNoKey, which the index reserves).
// The mask is SplitMix64(seed), so that every seed flips high bits and so samples another part of
// the key space.
uint64_t sampling_value(uint64_t key, uint64_t mask) { return (key ^ mask) >> 1; }

// The threshold for at most `rate` (values at or below it are sampled).
uint64_t threshold_for(const ShardsConfig& config) {
  const double largest = static_cast<double>(config.capacities_pages.back());
  const double rate = std::min(config.rate, static_cast<double>(config.max_keys) / largest);
  if (rate >= 1.0) return kLargestValue;
  return static_cast<uint64_t>(std::max(1.0, std::floor(rate * kTwoTo63))) - 1;
}

// ceil(rate x C_max): deeper keys miss at every capacity.
uint32_t window_for(double rate, const ShardsConfig& config) {
  const double keys = std::ceil(rate * static_cast<double>(config.capacities_pages.back()));
  return static_cast<uint32_t>(std::clamp(keys, 1.0, static_cast<double>(config.max_keys)));
}

}  // namespace

void ShardsConfig::validate() const {
  if (!(rate > 0.0 && rate <= 1.0)) {
    throw std::invalid_argument(fmt::format("MRC sampling rate must be in (0, 1], got {}", rate));
  }
  if (max_keys == 0) throw std::invalid_argument("MRC max_keys must be at least 1");
  if (capacities_pages.empty() || capacities_pages.size() > kMaxCapacities) {
    throw std::invalid_argument(fmt::format("MRC needs 1 to {} capacities, got {}", kMaxCapacities,
                                            capacities_pages.size()));
  }
  for (std::size_t i = 0; i < capacities_pages.size(); ++i) {
    if (capacities_pages[i] == 0 || (i > 0 && capacities_pages[i] <= capacities_pages[i - 1])) {
      throw std::invalid_argument(fmt::format(
          "MRC capacities must be positive and strictly ascending, got {} pages after {}",
          capacities_pages[i], i > 0 ? capacities_pages[i - 1] : 0));
    }
  }
}

ShardsMrc::ShardsMrc(ShardsConfig config)
    : config_((config.validate(), std::move(config))),
      mask_(splitmix64(config_.seed)),
      threshold_(threshold_for(config_)),
      rate_((static_cast<double>(threshold_) + 1.0) / kTwoTo63),
      weight_(1.0 / rate_),
      scaled_capacities_(config_.capacities_pages.size()),
      bucket_weight_(config_.capacities_pages.size() + 1, 0.0),
      index_(window_for(rate_, config_)) {
  for (std::size_t i = 0; i < scaled_capacities_.size(); ++i) {
    scaled_capacities_[i] = rate_ * static_cast<double>(config_.capacities_pages[i]);
  }
}

void ShardsMrc::access(std::span<const uint64_t> page_keys) {
  page_accesses_ += page_keys.size();
  // Every sampled page's distance as of the request's start...
  for (const uint64_t key : page_keys) {
    const uint64_t value = sampling_value(key, mask_);
    if (value > threshold_) continue;
    ++sampled_accesses_;
    record(index_.more_recent(value));
  }
  // ... then the pages go on top, deepest first, so that the root is the most recent. A full
  // window lets its least recent key go: with the new one on top it lies at depth
  // max_keys >= R x C_max, where it misses at every capacity, as an untracked key does.
  for (std::size_t i = page_keys.size(); i-- > 0;) {
    const uint64_t value = sampling_value(page_keys[i], mask_);
    if (value <= threshold_) index_.touch_evicting(value);
  }
}

void ShardsMrc::record(std::optional<uint64_t> distance) {
  std::size_t bucket = scaled_capacities_.size();
  if (distance) {
    const double d = static_cast<double>(*distance);
    bucket = 0;
    while (bucket < scaled_capacities_.size() && d >= scaled_capacities_[bucket]) ++bucket;
  }
  bucket_weight_[bucket] += weight_;
}

double ShardsMrc::hit_pages(std::size_t i) const {
  if (i >= scaled_capacities_.size()) {
    throw std::out_of_range(fmt::format("MRC capacity {} of {}", i, scaled_capacities_.size()));
  }
  double misses = 0.0;
  for (std::size_t b = i + 1; b < bucket_weight_.size(); ++b) misses += bucket_weight_[b];
  return std::clamp(static_cast<double>(page_accesses_) - misses, 0.0,
                    static_cast<double>(page_accesses_));
}

}  // namespace radixkv::metrics
