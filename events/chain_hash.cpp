#include "events/chain_hash.h"

// XXH3_state_t lives on the stack here, which needs its definition.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace radixkv::events {

namespace {

// The hash is defined over little-endian bytes; a big-endian port would byte-swap here.
static_assert(std::endian::native == std::endian::little,
              "chain hashes are defined over little-endian bytes");

ChainHash from_xxh(XXH128_hash_t h) { return {h.low64, h.high64}; }

}  // namespace

ChainHash namespace_seed(Namespace ns) {
  constexpr std::string_view kTag = "radixkv-page-hash-v1";
  unsigned char bytes[kTag.size() + sizeof(ns)];
  std::memcpy(bytes, kTag.data(), kTag.size());
  std::memcpy(bytes + kTag.size(), &ns, sizeof(ns));
  return from_xxh(XXH3_128bits(bytes, sizeof(bytes)));
}

ChainHash chain_page_hash(const ChainHash& parent, std::span<const TokenId> tokens) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  const uint64_t halves[2] = {parent.low, parent.high};
  XXH3_128bits_update(&state, halves, sizeof(halves));
  XXH3_128bits_update(&state, tokens.data(), tokens.size_bytes());
  return from_xxh(XXH3_128bits_digest(&state));
}

std::vector<BlockHash> prefix_block_hashes(Namespace ns, std::span<const TokenId> tokens,
                                           uint32_t page_tokens) {
  if (page_tokens == 0) throw std::invalid_argument("page size must be at least 1 token");
  std::vector<BlockHash> hashes;
  hashes.reserve(tokens.size() / page_tokens);
  ChainHash hash = namespace_seed(ns);
  for (size_t at = 0; at + page_tokens <= tokens.size(); at += page_tokens) {
    hash = chain_page_hash(hash, tokens.subspan(at, page_tokens));
    hashes.push_back(block_hash(hash));
  }
  return hashes;
}

}  // namespace radixkv::events
