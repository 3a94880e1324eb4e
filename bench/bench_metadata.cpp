// BM_Metadata/<impl>/tree:<T>: bytes of index metadata per cached token, measured on the match
// world (page tokens 16), reported as counters (the time of this "benchmark" means nothing).
//   radix:     RadixTree::metadata_bytes(): nodes, edge token arrays, page id arrays, child
//              tables and the per-page bitmap, each by mimalloc's usable size.
//   blockhash: the hash map's heap bytes (counted by the bench binary's operator new) plus its
//              per-page refcount and free-queue arrays; it keeps no tokens.
//   linear:    the heap bytes of its copies of every stored prompt.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "bench/match_world.h"
#include "bench/suite.h"

namespace radixkv::bench {

namespace {

enum class Impl { kRadix, kBlockHash, kLinear };

void bm_metadata(benchmark::State& state, uint64_t tree_tokens, Impl impl) {
  MatchWorld& world = match_world(tree_tokens);
  uint64_t bytes = 0;
  for (auto _ : state) {
    switch (impl) {
      case Impl::kRadix:
        bytes = world.tree.metadata_bytes();
        break;
      case Impl::kBlockHash:
        bytes = static_cast<uint64_t>(world.blockhash_bytes);
        break;
      case Impl::kLinear:
        bytes = static_cast<uint64_t>(world.linear_bytes);
        break;
    }
    benchmark::DoNotOptimize(bytes);
  }
  const auto cached = static_cast<double>(world.cached_tokens());
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["cached_tokens"] = cached;
  state.counters["bytes_per_token"] = static_cast<double>(bytes) / cached;
  state.counters["nodes"] = static_cast<double>(world.tree.stats().nodes);
}

}  // namespace

void register_metadata_benchmarks() {
  for (uint64_t tree_tokens : tree_sizes()) {
    for (auto [impl, name] :
         {std::pair{Impl::kRadix, "radix"}, std::pair{Impl::kBlockHash, "blockhash"},
          std::pair{Impl::kLinear, "linear"}}) {
      benchmark::RegisterBenchmark(fmt::format("BM_Metadata/{}/tree:{}", name, tree_tokens).c_str(),
                                   bm_metadata, tree_tokens, impl)
          ->Iterations(1);
    }
  }
}

}  // namespace radixkv::bench
