#include "radix/page_hash.h"

// The streaming state is declared on the stack, which needs its definition.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <bit>
#include <cstring>
#include <string_view>

namespace radixkv {

namespace {

// The byte order the hash is defined in; a big-endian port would byte-swap here.
static_assert(std::endian::native == std::endian::little,
              "page hashes are defined over little-endian bytes");

PageHash from_xxh(XXH128_hash_t h) { return {h.low64, h.high64}; }

void update_with(XXH3_state_t* state, const PageHash& hash) {
  const uint64_t halves[2] = {hash.low, hash.high};
  XXH3_128bits_update(state, halves, sizeof(halves));
}

}  // namespace

PageHash namespace_seed(Namespace ns) {
  constexpr std::string_view kTag = "radixkv-page-hash-v1";
  unsigned char bytes[kTag.size() + sizeof(Namespace)];
  std::memcpy(bytes, kTag.data(), kTag.size());
  std::memcpy(bytes + kTag.size(), &ns, sizeof(ns));
  return from_xxh(XXH3_128bits(bytes, sizeof(bytes)));
}

PageHash chain_page_hash(const PageHash& parent, std::span<const TokenId> tokens) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  update_with(&state, parent);
  XXH3_128bits_update(&state, tokens.data(), tokens.size_bytes());
  return from_xxh(XXH3_128bits_digest(&state));
}

PageHash chain_page_hashes(Namespace ns, std::span<const TokenId> tokens, uint32_t page_tokens,
                           std::size_t first, std::size_t count, std::vector<PageHash>& out) {
  PageHash parent = namespace_seed(ns);
  for (std::size_t i = 0; i < first; ++i) {
    parent = chain_page_hash(parent, tokens.subspan(i * page_tokens, page_tokens));
  }
  out.clear();
  PageHash hash = parent;
  for (std::size_t i = first; i < first + count; ++i) {
    hash = chain_page_hash(hash, tokens.subspan(i * page_tokens, page_tokens));
    out.push_back(hash);
  }
  return parent;
}

}  // namespace radixkv
