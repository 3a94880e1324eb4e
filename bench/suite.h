// Registration of the benchmark suite. Names follow BM_<Operation>/<impl>/<case>..., so that a
// filter such as --benchmark_filter='BM_Match/' selects one operation across implementations.
#pragma once

#include <cstdint>
#include <vector>

namespace radixkv::bench {

// Tree sizes in cached tokens: 10^4 .. 10^7, capped by RADIXKV_BENCH_MAX_TOKENS when set (for a
// quick run).
std::vector<uint64_t> tree_sizes();

void register_match_benchmarks();
void register_insert_benchmarks();
void register_evict_benchmarks();
void register_lock_benchmarks();
void register_metadata_benchmarks();
void register_runtime_benchmarks();

}  // namespace radixkv::bench
