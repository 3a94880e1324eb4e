// ChainHash: the chained 128-bit page hash that names a cached page, and the 64-bit block hash KV
// events carry (docs/cluster.md, "Block hashes"). A stand-in, with the same definition, for the
// radix/page_hash.h that the tiers bring; this file goes away when they land.
//
//   seed(ns)      = XXH3_128("radixkv-page-hash-v1" (its 20 bytes) || ns as 8 bytes little-endian)
//   h(first page) = XXH3_128(seed(ns) || the page's tokens)
//   h(page i)     = XXH3_128(h(page i-1) || page i's tokens)
// with a hash written as 16 bytes, low 64 bits first, each half little-endian, and tokens as int32
// little-endian. XXH3 is libxxhash's (https://xxhash.com). A page's hash depends only on the
// namespace and the tokens from the root through the page: stable across runs and machines, and
// equal on every worker that cached the same prefix, which is what a router matches on.
//
// block_hash() is the low 64 bits, the integer a vLLM consumer sees as a block hash.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <vector>

#include "events/kv_event.h"
#include "radix/radix_node.h"  // TokenId, Namespace

namespace radixkv::events {

struct ChainHash {
  uint64_t low = 0;
  uint64_t high = 0;
  friend auto operator<=>(const ChainHash&, const ChainHash&) = default;
};

ChainHash namespace_seed(Namespace ns);
// The hash of the page holding `tokens` whose parent page hashes to `parent` (namespace_seed() for
// the first page of a path).
ChainHash chain_page_hash(const ChainHash& parent, std::span<const TokenId> tokens);
inline BlockHash block_hash(const ChainHash& hash) { return hash.low; }

// The block hashes of the whole pages of `tokens` (a trailing partial page has none), as a worker
// that cached them in namespace `ns` with `page_tokens`-token pages publishes them. Throws
// std::invalid_argument when page_tokens is 0.
std::vector<BlockHash> prefix_block_hashes(Namespace ns, std::span<const TokenId> tokens,
                                           uint32_t page_tokens);

}  // namespace radixkv::events
