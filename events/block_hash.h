// The block hashes of KV events: radixkv's chained page hash (radix/page_hash.h) cut to its low 64
// bits (event_id()), the integer a vLLM consumer sees as a block hash. A block's hash depends only
// on the namespace and the tokens from the root through the block, so a router hashes a request's
// tokens itself and finds the blocks every worker published for that prefix (docs/cluster.md,
// "Block hashes").
#pragma once

#include <cstdint>
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

}  // namespace radixkv::events
