#include "bench/baselines/linear_index.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace radixkv::bench {

uint32_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  const std::size_t n = std::min(a.size(), b.size());
  // memcmp narrows the difference down to 256 tokens, then 16, then token by token (the same
  // search as the radix tree's, so that the comparison costs the same on both sides).
  std::size_t i = 0;
  for (const std::size_t block : {256u, 16u}) {
    while (n - i >= block &&
           std::memcmp(a.data() + i, b.data() + i, block * sizeof(TokenId)) == 0) {
      i += block;
    }
  }
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<uint32_t>(i);
}

LinearIndex::LinearIndex(uint32_t page_tokens) : page_tokens_(page_tokens) {
  if (page_tokens == 0) throw std::invalid_argument("LinearIndex: page_tokens must be >= 1");
}

LinearIndex::Match LinearIndex::match(std::span<const TokenId> tokens) const {
  Match best;
  for (std::size_t i = 0; i < prompts_.size(); ++i) {
    const uint32_t same = common_prefix(prompts_[i], tokens) / page_tokens_ * page_tokens_;
    if (same > best.tokens) best = {same, static_cast<uint32_t>(i)};
  }
  return best;
}

void LinearIndex::insert(std::span<const TokenId> tokens) {
  prompts_.emplace_back(tokens.begin(), tokens.end());
}

}  // namespace radixkv::bench
