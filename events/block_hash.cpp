#include "events/block_hash.h"

#include <stdexcept>

namespace radixkv::events {

std::vector<BlockHash> prefix_block_hashes(Namespace ns, std::span<const TokenId> tokens,
                                           uint32_t page_tokens) {
  if (page_tokens == 0) throw std::invalid_argument("page size must be at least 1 token");
  // The page hashes the trie and the remote tier use, cut to the events' 64 bits.
  std::vector<PageHash> pages;
  chain_page_hashes(ns, tokens, page_tokens, 0, tokens.size() / page_tokens, pages);
  std::vector<BlockHash> hashes;
  hashes.reserve(pages.size());
  for (const PageHash& hash : pages) hashes.push_back(block_hash(hash));
  return hashes;
}

}  // namespace radixkv::events
