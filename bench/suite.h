// Registration of the benchmark suite. Names follow BM_<Operation>/<impl>/<case>..., so that a
// filter such as --benchmark_filter='BM_Match/' selects one operation across implementations.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace radixkv::bench {

// Tree sizes in cached tokens: 10^4 .. 10^7, capped by RADIXKV_BENCH_MAX_TOKENS when set (for a
// quick run).
std::vector<uint64_t> tree_sizes();

// The manual clock of benchmarks that time only part of an iteration (UseManualTime).
using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void register_match_benchmarks();
void register_insert_benchmarks();
void register_evict_benchmarks();
void register_lock_benchmarks();
void register_metadata_benchmarks();
void register_runtime_benchmarks();
void register_mrc_benchmarks();

}  // namespace radixkv::bench
