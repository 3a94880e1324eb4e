// PageHash: the one name of a cached page that the tiers, the KV events and the remote tier share.
//
// A chained 128-bit hash (XXH3-128, https://xxhash.com, as libxxhash computes it):
//   seed(ns)      = XXH3_128("radixkv-page-hash-v1" (20 bytes, no terminator) || ns as 8 bytes LE)
//   h(first page) = XXH3_128(seed(ns) || tokens of the page)
//   h(page i)     = XXH3_128(h(page i-1) || tokens of page i)
// where a hash is written as its 16 bytes, low 64 bits first, each half little-endian, and tokens
// as int32 little-endian. It depends only on the namespace and the tokens from the root through
// the page, so it is stable across runs and machines, and two pages of one trie differ in hash
// unless XXH3-128 collides. KV events use the low 64 bits (event_id()).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "radix/radix_node.h"

namespace radixkv {

struct PageHash {
  uint64_t low = 0;
  uint64_t high = 0;
  friend auto operator<=>(const PageHash&, const PageHash&) = default;
};

// For unordered containers keyed by page hash (the remote tier's known and prefetched pages).
struct PageHashKey {
  std::size_t operator()(const PageHash& h) const noexcept {
    return h.low ^ (h.high * 0x9e3779b97f4a7c15);
  }
};

PageHash namespace_seed(Namespace ns);
// The hash of the page holding `tokens` (one page of them) whose parent page hashes to `parent`
// (namespace_seed() for the first page of a path).
PageHash chain_page_hash(const PageHash& parent, std::span<const TokenId> tokens);
inline uint64_t event_id(const PageHash& hash) noexcept { return hash.low; }

// The hashes of pages [first, first + count) of `tokens` (page_tokens each) in namespace `ns`,
// into `out`; returns the hash before page `first` (namespace_seed(ns) when first is 0). What the
// remote tier looks a prompt's pages up by.
PageHash chain_page_hashes(Namespace ns, std::span<const TokenId> tokens, uint32_t page_tokens,
                           std::size_t first, std::size_t count, std::vector<PageHash>& out);

}  // namespace radixkv
