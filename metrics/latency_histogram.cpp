#include "metrics/latency_histogram.h"

#include <algorithm>

namespace radixkv::metrics {

const std::array<double, 24>& LatencyHistogram::upper_bounds_seconds() {
  static const std::array<double, 24> seconds = [] {
    std::array<double, 24> s{};
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<double>(kUpperBoundsNs[i]) / 1e9;
    return s;
  }();
  return seconds;
}

void LatencyHistogram::observe(std::chrono::nanoseconds duration) {
  const uint64_t ns = duration.count() > 0 ? static_cast<uint64_t>(duration.count()) : 0;
  // The first bound at or above ns: Prometheus buckets are "less than or equal".
  const auto bound = std::lower_bound(kUpperBoundsNs.begin(), kUpperBoundsNs.end(), ns);
  ++counts_[static_cast<std::size_t>(bound - kUpperBoundsNs.begin())];
  ++count_;
  sum_ns_ += ns;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ns_ += other.sum_ns_;
}

}  // namespace radixkv::metrics
