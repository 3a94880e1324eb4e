#include "router/block_key.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <msgpack.hpp>
#include <stdexcept>
#include <string_view>

namespace radixkv::router {

namespace {

PageHash mix(const PageHash& parent, const events::ExtraKeys& extra_keys) {
  constexpr std::string_view kTag = "radixkv-extra-keys-v1";
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, kTag.data(), kTag.size());
  const uint64_t halves[2] = {parent.low, parent.high};  // little-endian, as radix/page_hash.h
  XXH3_128bits_update(&state, halves, sizeof(halves));
  XXH3_128bits_update(&state, extra_keys.data(), extra_keys.size());
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return {h.low64, h.high64};
}

}  // namespace

PageHash content_hash(const PageHash& parent, std::span<const TokenId> tokens,
                      const events::ExtraKeys* extra_keys) {
  return chain_page_hash(extra_keys != nullptr ? mix(parent, *extra_keys) : parent, tokens);
}

std::optional<events::ExtraKeys> request_extra_keys(const KeyNamespace& ns, bool first_block) {
  const bool salt = first_block && ns.cache_salt.has_value();
  const uint32_t parts = (ns.lora_name ? 1 : 0) + (salt ? 1 : 0);
  if (parts == 0) return std::nullopt;
  msgpack::sbuffer bytes;
  msgpack::packer<msgpack::sbuffer> pk(&bytes);
  pk.pack_array(parts);
  if (ns.lora_name) pk.pack(*ns.lora_name);
  if (salt) pk.pack(*ns.cache_salt);
  return events::ExtraKeys(bytes.data(), bytes.size());
}

std::vector<BlockKey> request_keys(const KeyNamespace& ns, std::span<const TokenId> tokens,
                                   uint32_t block_tokens) {
  if (block_tokens == 0) throw std::invalid_argument("a block holds at least 1 token");
  const size_t blocks = tokens.size() / block_tokens;
  std::vector<BlockKey> keys;
  keys.reserve(blocks);
  const std::optional<events::ExtraKeys> first = request_extra_keys(ns, true);
  const std::optional<events::ExtraKeys> rest = request_extra_keys(ns, false);
  PageHash hash = namespace_seed(ns.ns);
  for (size_t b = 0; b < blocks; ++b) {
    const std::optional<events::ExtraKeys>& extra = b == 0 ? first : rest;
    hash = content_hash(hash, tokens.subspan(b * block_tokens, block_tokens),
                        extra ? &*extra : nullptr);
    keys.push_back(key_of(hash));
  }
  return keys;
}

}  // namespace radixkv::router
