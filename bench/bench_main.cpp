// radixkv_bench: the index side by side with the designs it replaces (see bench/README.md).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/suite.h"
#include "kv_store/heap.h"

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
  register_mrc_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // RADIXKV_BENCH_HUGE_PAGES=1: the trees in transparent huge pages (kv_store/heap.h), before any
  // is built.
  if (const char* huge = std::getenv("RADIXKV_BENCH_HUGE_PAGES");
      huge && std::string(huge) == "1") {
    if (!radixkv::heap::use_huge_pages(true)) {
      std::fprintf(stderr,
                   "radixkv_bench: RADIXKV_BENCH_HUGE_PAGES=1, but this machine or build "
                   "has no transparent huge pages\n");
      return 1;
    }
    benchmark::AddCustomContext("huge_pages", "on");
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
