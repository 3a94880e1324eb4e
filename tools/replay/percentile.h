// Percentiles, the one definition every radixkv report uses: nearest rank. The p-th percentile
// (p in 1..100) of n sorted samples is the sample of rank ceil(p * n / 100), counting from 1: the
// smallest sample with at least p % of all samples at or below it. So p50 of 1..10 is 5, p90 is
// 9, p99 is 10; p100 is the largest. Integer arithmetic, so no rounding moves a rank.
#pragma once

#include <cstdint>
#include <vector>

namespace radixkv::tools {

// The rank (1-based) of the p-th percentile among n > 0 samples.
constexpr std::size_t nearest_rank(std::size_t n, uint32_t percent) {
  const std::size_t rank = (n * percent + 99) / 100;
  return rank == 0 ? 1 : rank;
}

// The p-th percentile of `sorted` (ascending); T{} when it is empty.
template <typename T>
T percentile(const std::vector<T>& sorted, uint32_t percent) {
  if (sorted.empty()) return T{};
  return sorted[nearest_rank(sorted.size(), percent) - 1];
}

}  // namespace radixkv::tools
