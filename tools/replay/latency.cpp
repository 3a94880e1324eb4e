#include "tools/replay/latency.h"

#include <algorithm>
#include <cmath>

namespace radixkv::tools {

LatencySummary LatencyRecorder::summary() const {
  LatencySummary s;
  s.count = samples_ns_.size();
  if (samples_ns_.empty()) return s;
  std::vector<uint64_t> sorted = samples_ns_;
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank: the smallest sample with at least p of all samples at or below it.
  auto rank = [&](double p) {
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return static_cast<double>(sorted[std::clamp<std::size_t>(k, 1, sorted.size()) - 1]) / 1e3;
  };
  s.p50_us = rank(0.50);
  s.p90_us = rank(0.90);
  s.p99_us = rank(0.99);
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
