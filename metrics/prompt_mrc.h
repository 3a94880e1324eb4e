// PromptMrc: the live miss-ratio curve of a prefix cache of page_tokens-token pages, fed the
// prompts it serves: the LRU hit rate, in prompt tokens, at 1/4x, 1/2x, 1x, 2x, 4x and 8x a
// capacity.
//
// Each prompt accesses its full pages in order (a partial last page is never cached), each named
// by a key chained through the pages before it (prompt_page_keys below), and ShardsMrc
// (metrics/shards_mrc.h) estimates how many of those accesses LRU over pages would hit at each
// size. hit_rate = hit pages x page_tokens / prompt tokens (every token of every prompt, as the
// replay's hit rate counts them). For cache-mode replay with policy lru this is exact at rate 1
// (docs/metrics.md).
// Memory: ShardsMrc::memory_bound(config.max_keys) plus one key per page of the longest prompt
// (a buffer reused between calls). Single-owner.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "metrics/shards_mrc.h"
#include "radix/radix_node.h"

namespace radixkv::metrics {

inline constexpr std::array<double, 6> kMrcMultiples = {0.25, 0.5, 1.0, 2.0, 4.0, 8.0};

// The keys of the full pages of `tokens` in namespace `ns`, into `out` (cleared first):
//   key(page -1) = SplitMix64(ns)
//   key(page i)  = key(page i-1) x kPageKeyMultiplier  xor  XXH3_64(tokens of page i)
// (tokens as int32 in native byte order; kPageKeyMultiplier is odd, so the step is a bijection of
// the previous key). Each page's XXH3 is independent of the chain, so the pages hash in parallel
// and only a multiply and an xor are serial. Two pages get one key only if the namespace and
// every token from the start through the page agree, up to 64-bit collisions; keys are uniform,
// as SHARDS's sampling needs. Cheaper than the 128-bit PageHash (radix/page_hash.h), which names
// stored bytes; this only names a page for the curve.
inline constexpr uint64_t kPageKeyMultiplier = 0x9E3779B97F4A7C15ull;
void prompt_page_keys(Namespace ns, std::span<const TokenId> tokens, uint32_t page_tokens,
                      std::vector<uint64_t>& out);

struct MrcPoint {
  double multiple = 0.0;         // of the capacity the curve was made for
  uint64_t capacity_pages = 0;   // round(multiple x capacity), in pages
  uint64_t capacity_tokens = 0;  // capacity_pages x page_tokens
  double hit_rate = 0.0;         // estimated LRU hit tokens / prompt tokens (0 with no prompt yet)
};

class PromptMrc {
 public:
  // `capacity_pages` is the cache's own size (at least 4, so that 1/4 of it is a page); `shards`
  // is the sampler's config, whose capacities this fills in. Throws std::invalid_argument for a
  // page size of 0, a capacity below 4 pages, or a bad sampler config.
  PromptMrc(uint32_t page_tokens, uint64_t capacity_pages, ShardsConfig shards = {});

  // One request's prompt.
  void access(Namespace ns, std::span<const TokenId> prompt);

  uint32_t page_tokens() const { return page_tokens_; }
  uint64_t prompt_tokens() const { return prompt_tokens_; }
  std::vector<MrcPoint> curve() const;
  const ShardsMrc& sampler() const { return shards_; }
  std::size_t memory_bytes() const;

 private:
  uint32_t page_tokens_;
  ShardsMrc shards_;
  uint64_t prompt_tokens_ = 0;
  std::vector<uint64_t> keys_;
};

}  // namespace radixkv::metrics
