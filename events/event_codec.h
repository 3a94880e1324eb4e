// The msgpack payload of one KV event batch, in the two encodings vLLM consumers read.
//
// Field names, their order and the tagging are vLLM's (vllm/distributed/kv_events.py, where the
// structs are msgspec Structs with tag=True and omit_defaults=True):
//
//   map (vLLM's current encoding; EventBatch and KVCacheEvent are plain Structs)
//     {"ts": float64, "events": [event...], "data_parallel_rank": int}
//     {"type": "BlockStored", "block_hashes": [hash...], "parent_block_hash": hash | nil,
//      "token_ids": [int...], "block_size": int, "lora_id": int | nil, "medium": str | nil,
//      "lora_name": str | nil, "extra_keys": [tuple | nil...], "group_idx": int,
//      "kv_cache_spec_kind": str, "kv_cache_spec_sliding_window": int}
//     {"type": "BlockRemoved", "block_hashes": [hash...], "medium": str | nil, "group_idx": int}
//     {"type": "AllBlocksCleared"}
//   array (the older array_like=True encoding, which SGLang still writes: each struct an array in
//          field order, the tag first for events)
//     [ts, [event...], data_parallel_rank]
//     ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
//      lora_name, extra_keys, group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window]
//     ["BlockRemoved", block_hashes, medium, group_idx]
//     ["AllBlocksCleared"]
//
// As msgspec writes them: integers in their shortest msgpack form, ts as float64, strings as str.
// Fields with a default (data_parallel_rank, extra_keys, group_idx, kv_cache_spec_*) are left out
// when unset (omit_defaults): from a map; from an array, the unset ones after the last one set.
//
// decode_batch() reads either encoding, and each level in either (vLLM once wrote an array batch of
// map events); it ignores fields it does not know, accepts events that predate medium, lora_name
// and the later fields (SGLang's [tag, block_hashes] BlockRemoved), and throws EventDecodeError
// naming the first thing that is wrong ("events[2].block_hashes[0]: expected a block hash (an
// integer, bytes or str), got a map"). A block hash becomes 64 bits: an integer as it is (a
// negative one as its two's complement), bytes by their last 8 bytes big-endian (vLLM's own
// conversion to an integer), a str by XXH3-64 of its bytes. token_ids that are not all integers
// (SGLang's bigram keys) decode as none. extra_keys keep each block's tuple as msgpack bytes.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "events/kv_event.h"

namespace radixkv::events {

enum class EventEncoding { kMap, kArray };

std::string_view to_string(EventEncoding encoding);
// "map" or "array"; throws std::invalid_argument naming the value otherwise.
EventEncoding parse_event_encoding(std::string_view name);

class EventDecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string encode_batch(const EventBatch& batch, EventEncoding encoding);
EventBatch decode_batch(std::string_view payload);

}  // namespace radixkv::events
