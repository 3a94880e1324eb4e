// Block keys: how the router names a block by its content, whichever engine published it.
//
// An engine names its blocks by hashes of its own (vLLM: SHA-256 over a random or configured seed;
// SGLang: a hash of the page's tokens; radixkv: its chained page hash), so the same prefix has a
// different name on every kind of worker. The router keys every block by radixkv's chained page
// hash (radix/page_hash.h) over the tokens the BlockStored event carries, extended by the block's
// extra keys (vLLM's: LoRA name, multimodal identifiers, cache salt):
//
//   h(parent of a path's first block) = namespace_seed(ns)   (ns from the first block's extra keys
//                                                             (ns,), radixkv's; 0 otherwise)
//   h(block) = chain_page_hash(mix(h(parent), extra), tokens)   when the block has extra keys
//            = chain_page_hash(h(parent), tokens)               when it has none
//   mix(h, extra) = XXH3_128("radixkv-extra-keys-v1" || h || extra), extra as msgpack bytes
//   key(block) = the low 64 bits of h(block)
//
// So a radixkv block's key is its published hash, and a request's tokens (with its namespace, LoRA
// name and cache salt) give the keys of its blocks on every worker. A block's extra keys are what
// vLLM sent in extra_keys; without that field, a LoRA name alone keys every block as vLLM does,
// (lora_name,). A request's extra keys are built the way vLLM builds them for a text prompt:
// (lora_name, cache_salt) for the first block, (lora_name,) for the others, leaving out what is
// not given; a multimodal prompt's blocks cannot be named from its tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "events/kv_event.h"
#include "radix/page_hash.h"

namespace radixkv::router {

using BlockKey = uint64_t;

// What keys a request's blocks besides its tokens.
struct KeyNamespace {
  Namespace ns = 0;                         // radixkv's namespace (tenant, adapter, salt)
  std::optional<std::string> lora_name{};   // vLLM: in every block's extra keys
  std::optional<std::string> cache_salt{};  // vLLM: in the first block's extra keys
};

// The chained hash of a block whose parent hashes to `parent`.
PageHash content_hash(const PageHash& parent, std::span<const TokenId> tokens,
                      const events::ExtraKeys* extra_keys);
inline BlockKey key_of(const PageHash& hash) { return hash.low; }

// vLLM's extra keys of a request's block: msgpack (lora_name, cache_salt) for the first block,
// (lora_name,) for the others; nullopt when there are none.
std::optional<events::ExtraKeys> request_extra_keys(const KeyNamespace& ns, bool first_block);

// The keys of the whole `block_tokens`-token blocks of `tokens` (a partial last block has none).
// Throws std::invalid_argument when block_tokens is 0.
std::vector<BlockKey> request_keys(const KeyNamespace& ns, std::span<const TokenId> tokens,
                                   uint32_t block_tokens);

}  // namespace radixkv::router
