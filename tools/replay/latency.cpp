#include "tools/replay/latency.h"

#include <algorithm>

#include "tools/replay/percentile.h"

namespace radixkv::tools {

LatencySummary LatencyRecorder::summary() const {
  LatencySummary s;
  s.count = samples_ns_.size();
  if (samples_ns_.empty()) return s;
  std::vector<uint64_t> sorted = samples_ns_;
  std::sort(sorted.begin(), sorted.end());
  const auto us = [&](uint32_t percent) {
    return static_cast<double>(percentile(sorted, percent)) / 1e3;
  };
  s.p50_us = us(50);
  s.p90_us = us(90);
  s.p99_us = us(99);
  s.max_us = static_cast<double>(sorted.back()) / 1e3;
  s.mean_us = total_seconds() * 1e6 / static_cast<double>(sorted.size());
  return s;
}

double LatencyRecorder::total_seconds() const {
  uint64_t total = 0;
  for (uint64_t ns : samples_ns_) total += ns;
  return static_cast<double>(total) / 1e9;
}

}  // namespace radixkv::tools
