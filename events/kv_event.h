// The KV events a serving engine publishes about its prefix cache, as vLLM defines them
// (vllm/distributed/kv_events.py: BlockStored, BlockRemoved, AllBlocksCleared, EventBatch), so that
// consumers written for vLLM (NVIDIA Dynamo's KV router, llm-d's prefix-cache scorer) read
// radixkv's stream unchanged. events/event_codec.h puts them on the wire.
//
//   BlockStored       consecutive blocks of one path entered `medium`: block_hashes[0]'s parent is
//                     parent_block_hash (none at a namespace root); token_ids are the blocks'
//                     tokens concatenated (block_hashes.size() * block_size of them).
//   BlockRemoved      the blocks left `medium` (they may still be on another medium); `reason`,
//                     radixkv's extension after vLLM's fields, says why (radix/tier_events.h,
//                     RemovalReason: "evicted", "demoted", "promoted", "cleared"). It is the last
//                     element of the array encoding and a key of the map one; a decoder written
//                     for vLLM ignores it (msgspec drops an array_like struct's extra trailing
//                     elements and a map's unknown keys; docs/events.md).
//   AllBlocksCleared  every block left every medium.
//
// A block hash is the engine's name for a block. vLLM's ExternalBlockHash is bytes (SHA-256 of the
// block and its parent) or an integer; SGLang's a signed 64-bit integer; radixkv's its chained page
// hash cut to the low 64 bits (events/block_hash.h). The decoder brings every form to 64 bits
// (events/event_codec.h says how), so that a consumer compares them as integers.
//
// radixkv's own events leave lora_id and lora_name empty: it keys adapters (and tenants, cache
// salts) by namespace, folded into the hash; a block at the root of a namespace other than 0 says
// which in its extra keys, the 1-tuple (namespace,) (events/block_hash.h). Applying a batch's
// events in order, batch after batch, gives the publisher's set of (medium, block) exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace radixkv::events {

using BlockHash = uint64_t;

// One block's extra keys as vLLM hashes them (multimodal identifiers, the LoRA name, the cache
// salt, prompt-embedding digests): the msgpack bytes of the tuple, packed by msgpack-cxx (shortest
// forms), so that equal tuples are equal bytes whoever encoded them.
using ExtraKeys = std::string;

struct BlockStored {
  std::vector<BlockHash> block_hashes;
  std::optional<BlockHash> parent_block_hash;
  // The blocks' tokens concatenated; empty when the publisher sent none, or sent something other
  // than integers (SGLang's bigram keys), since then they cannot name the blocks' content.
  std::vector<int64_t> token_ids;
  uint32_t block_size = 0;
  std::optional<int64_t> lora_id;  // deprecated by vLLM for lora_name
  std::optional<std::string> medium;
  std::optional<std::string> lora_name;
  // vLLM's later fields, all defaulting to None (left out on the wire when unset):
  std::optional<std::vector<std::optional<ExtraKeys>>> extra_keys{};  // one entry per block
  std::optional<int64_t> group_idx{};                                 // the KV cache group
  std::optional<std::string> kv_cache_spec_kind{};
  std::optional<int64_t> kv_cache_spec_sliding_window{};
  friend bool operator==(const BlockStored&, const BlockStored&) = default;
};

struct BlockRemoved {
  std::vector<BlockHash> block_hashes;
  std::optional<std::string> medium;
  std::optional<int64_t> group_idx{};
  std::optional<std::string> reason{};  // radixkv's: why they left (above)
  friend bool operator==(const BlockRemoved&, const BlockRemoved&) = default;
};

struct AllBlocksCleared {
  friend bool operator==(const AllBlocksCleared&, const AllBlocksCleared&) = default;
};

using KvEvent = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

// One publish: every event of one runtime call, in order. ts is seconds since the Unix epoch, as
// vLLM stamps it (time.time()).
struct EventBatch {
  double ts = 0;
  std::vector<KvEvent> events;
  std::optional<int64_t> data_parallel_rank;
  friend bool operator==(const EventBatch&, const EventBatch&) = default;
};

}  // namespace radixkv::events
