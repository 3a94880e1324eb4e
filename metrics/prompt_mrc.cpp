#include "metrics/prompt_mrc.h"

#include <fmt/format.h>
// Inlined (the header's own option): a page's XXH3 is a short input, where the library call
// costs about as much as the hash, and inlined the pages' hashes overlap.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cmath>
#include <stdexcept>

#include "common/splitmix64.h"

namespace radixkv::metrics {

namespace {

ShardsConfig with_multiples(ShardsConfig shards, uint32_t page_tokens, uint64_t capacity_pages) {
  if (page_tokens == 0) throw std::invalid_argument("MRC page size must be at least 1 token");
  if (capacity_pages < 4) {
    throw std::invalid_argument(fmt::format(
        "MRC needs a capacity of at least 4 pages (its curve starts at 1/4 of it), got {}",
        capacity_pages));
  }
  shards.capacities_pages.clear();
  for (const double multiple : kMrcMultiples) {
    shards.capacities_pages.push_back(
        static_cast<uint64_t>(std::llround(multiple * static_cast<double>(capacity_pages))));
  }
  return shards;
}

}  // namespace

void prompt_page_keys(Namespace ns, std::span<const TokenId> tokens, uint32_t page_tokens,
                      std::vector<uint64_t>& out) {
  out.clear();
  const std::size_t pages = tokens.size() / page_tokens;
  out.reserve(pages);
  uint64_t key = splitmix64(ns);
  for (std::size_t i = 0; i < pages; ++i) {
    key = key * kPageKeyMultiplier ^
          XXH3_64bits(tokens.data() + i * page_tokens, page_tokens * sizeof(TokenId));
    out.push_back(key);
  }
}

PromptMrc::PromptMrc(uint32_t page_tokens, uint64_t capacity_pages, ShardsConfig shards)
    : page_tokens_(page_tokens),
      shards_(with_multiples(std::move(shards), page_tokens, capacity_pages)) {}

void PromptMrc::access(Namespace ns, std::span<const TokenId> prompt) {
  prompt_page_keys(ns, prompt, page_tokens_, keys_);  // the only allocation: first, so that a
  shards_.access(keys_);                              // failure leaves the curve as it was
  prompt_tokens_ += prompt.size();
}

std::vector<MrcPoint> PromptMrc::curve() const {
  std::vector<MrcPoint> points;
  for (std::size_t i = 0; i < kMrcMultiples.size(); ++i) {
    MrcPoint& p = points.emplace_back();
    p.multiple = kMrcMultiples[i];
    p.capacity_pages = shards_.capacities_pages()[i];
    p.capacity_tokens = p.capacity_pages * page_tokens_;
    p.hit_rate = prompt_tokens_ == 0
                     ? 0.0
                     : shards_.hit_pages(i) * page_tokens_ / static_cast<double>(prompt_tokens_);
  }
  return points;
}

std::size_t PromptMrc::memory_bytes() const {
  return shards_.memory_bytes() + keys_.capacity() * sizeof(uint64_t);
}

}  // namespace radixkv::metrics
