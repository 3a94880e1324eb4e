// LatencyHistogram: durations counted in fixed buckets, cheap enough for every admit (one search
// over 24 bounds and two additions; no allocation, no lock).
//
// Bounds, in seconds: 1, 2.5 and 5 per decade from 250 ns to 10 s (kUpperBounds), plus one bucket
// above the last. The sum is kept in nanoseconds, exactly. Histograms add up (merge), so that a
// sharded runtime exports one. Single-owner; a shard's histogram lives under its shard's lock.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <span>

namespace radixkv::metrics {

class LatencyHistogram {
 public:
  static constexpr std::array<uint64_t, 24> kUpperBoundsNs = {
      250,         500,         1'000,         2'500,         5'000,         10'000,
      25'000,      50'000,      100'000,       250'000,       500'000,       1'000'000,
      2'500'000,   5'000'000,   10'000'000,    25'000'000,    50'000'000,    100'000'000,
      250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
  // kUpperBoundsNs in seconds, for the exposition.
  static const std::array<double, 24>& upper_bounds_seconds();

  void observe(std::chrono::nanoseconds duration);
  void merge(const LatencyHistogram& other);

  // One count per bound, then the count above the last (not cumulative).
  std::span<const uint64_t> counts() const { return counts_; }
  uint64_t count() const { return count_; }
  uint64_t sum_ns() const { return sum_ns_; }
  double sum_seconds() const { return static_cast<double>(sum_ns_) * 1e-9; }

 private:
  std::array<uint64_t, kUpperBoundsNs.size() + 1> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ns_ = 0;
};

// Observes the time from its construction to its destruction (two steady_clock reads) into
// `histogram`; nothing at all (no clock read) when `histogram` is null.
class ScopedTimer {
 public:
  explicit ScopedTimer(LatencyHistogram* histogram)
      : histogram_(histogram),
        start_(histogram ? std::chrono::steady_clock::now()
                         : std::chrono::steady_clock::time_point{}) {}
  ~ScopedTimer() {
    if (histogram_) histogram_->observe(std::chrono::steady_clock::now() - start_);
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  LatencyHistogram* histogram_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace radixkv::metrics
