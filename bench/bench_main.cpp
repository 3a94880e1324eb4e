// radixkv_bench: the index side by side with the designs it replaces (see bench/README.md).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "bench/suite.h"

namespace radixkv::bench {

std::vector<uint64_t> tree_sizes() {
  uint64_t cap = ~uint64_t{0};
  if (const char* value = std::getenv("RADIXKV_BENCH_MAX_TOKENS")) cap = std::stoull(value);
  std::vector<uint64_t> sizes;
  for (uint64_t size : {10'000ull, 100'000ull, 1'000'000ull, 10'000'000ull}) {
    if (size <= cap) sizes.push_back(size);
  }
  return sizes;
}

}  // namespace radixkv::bench

int main(int argc, char** argv) {
  using namespace radixkv::bench;
  register_match_benchmarks();
  register_insert_benchmarks();
  register_evict_benchmarks();
  register_lock_benchmarks();
  register_metadata_benchmarks();
  register_runtime_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
