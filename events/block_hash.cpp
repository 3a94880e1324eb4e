#include "events/block_hash.h"

#include <stdexcept>

namespace radixkv::events {

std::vector<BlockHash> prefix_block_hashes(Namespace ns, std::span<const TokenId> tokens,
                                           uint32_t page_tokens) {
  if (page_tokens == 0) throw std::invalid_argument("page size must be at least 1 token");
  std::vector<BlockHash> hashes;
  hashes.reserve(tokens.size() / page_tokens);
  PageHash hash = namespace_seed(ns);
  for (size_t at = 0; at + page_tokens <= tokens.size(); at += page_tokens) {
    hash = chain_page_hash(hash, tokens.subspan(at, page_tokens));
    hashes.push_back(block_hash(hash));
  }
  return hashes;
}

}  // namespace radixkv::events
