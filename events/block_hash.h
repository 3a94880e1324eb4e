// The block hashes of KV events: radixkv's chained page hash (radix/page_hash.h) cut to its low 64
// bits (event_id()), the integer a vLLM consumer sees as a block hash. A block's hash depends only
// on the namespace and the tokens from the root through the block, so a router hashes a request's
// tokens itself and finds the blocks every worker published for that prefix (docs/cluster.md,
// "Block hashes").
//
// The namespace of a path's first block is published in its extra keys (vLLM's field for what else
// a block's hash covers) as the 1-tuple (namespace,), msgpack [ns]; namespace 0 publishes none. So
// a consumer that rehashes a block's tokens (router/block_key.h) knows the seed of the chain.
// vLLM's own extra keys never take that shape: their tuples hold str, bytes and (str, int) pairs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "events/kv_event.h"
#include "radix/page_hash.h"

namespace radixkv::events {

inline BlockHash block_hash(const PageHash& hash) { return event_id(hash); }

// The block hashes of the whole pages of `tokens` (a trailing partial page has none), as a worker
// that cached them in namespace `ns` with `page_tokens`-token pages publishes them. Throws
// std::invalid_argument when page_tokens is 0.
std::vector<BlockHash> prefix_block_hashes(Namespace ns, std::span<const TokenId> tokens,
                                           uint32_t page_tokens);

// msgpack [ns]: the extra keys of the first block of a path in namespace ns.
ExtraKeys namespace_extra_keys(Namespace ns);
// The namespace when `keys` is exactly msgpack [unsigned integer]; nullopt otherwise.
std::optional<Namespace> namespace_from_extra_keys(const ExtraKeys& keys);

}  // namespace radixkv::events
