// Latency samples of one kind of cache call, summarised as percentiles (nearest rank,
// tools/replay/percentile.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace radixkv::tools {

struct LatencySummary {
  uint64_t count = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0, mean_us = 0;
};

class LatencyRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  void reserve(std::size_t n) { samples_ns_.reserve(n); }
  void add(Clock::time_point start, Clock::time_point end) {
    samples_ns_.push_back(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
  }
  void add_ns(uint64_t ns) { samples_ns_.push_back(ns); }
  // Sorts a copy; call once at the end.
  LatencySummary summary() const;
  // Sum of all samples, in seconds.
  double total_seconds() const;

 private:
  std::vector<uint64_t> samples_ns_;
};

}  // namespace radixkv::tools
