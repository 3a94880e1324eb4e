// The msgpack payload of one KV event batch, in the two encodings vLLM consumers read.
//
// Field names, their order and the tagging are vLLM's (vllm/distributed/kv_events.py, where the
// structs are msgspec Structs with tag=True and omit_defaults=True):
//
//   map (vLLM's current encoding; EventBatch and KVCacheEvent are plain Structs)
//     {"ts": float64, "events": [event...], "data_parallel_rank": int}
//     {"type": "BlockStored", "block_hashes": [uint...], "parent_block_hash": uint | nil,
//      "token_ids": [int...], "block_size": int, "lora_id": int | nil, "medium": str | nil,
//      "lora_name": str | nil}
//     {"type": "BlockRemoved", "block_hashes": [uint...], "medium": str | nil}
//     {"type": "AllBlocksCleared"}
//   array (the older array_like=True encoding: each struct an array in field order, the tag
//          first for events)
//     [ts, [event...], data_parallel_rank]
//     ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
//      lora_name]
//     ["BlockRemoved", block_hashes, medium]
//     ["AllBlocksCleared"]
//
// As msgspec writes them: integers in their shortest msgpack form, ts as float64, strings as str;
// data_parallel_rank (default None) is left out when unset. Consumers written for the older array
// form that predates `lora_name` (and `medium`) ignore the trailing elements, as msgspec does.
//
// decode_batch() reads either encoding (a map or an array at the top), ignores fields it does not
// know (later vLLM versions add some, e.g. group_idx), accepts the older events without medium and
// lora_name, and throws EventDecodeError naming the first thing that is wrong
// ("events[2].block_hashes[0]: expected an integer, got str").
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
