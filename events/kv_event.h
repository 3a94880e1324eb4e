// The KV events a serving engine publishes about its prefix cache, as vLLM defines them
// (vllm/distributed/kv_events.py: BlockStored, BlockRemoved, AllBlocksCleared, EventBatch), so that
// consumers written for vLLM (NVIDIA Dynamo's KV router, llm-d's prefix-cache scorer) read
// radixkv's stream unchanged. events/event_codec.h puts them on the wire.
//
//   BlockStored       consecutive blocks of one path entered `medium`: block_hashes[0]'s parent is
//                     parent_block_hash (none at a namespace root); token_ids are the blocks'
//                     tokens concatenated (block_hashes.size() * block_size of them).
//   BlockRemoved      the blocks left `medium` (they may still be on another medium).
//   AllBlocksCleared  every block left every medium.
//
// A block hash is radixkv's chained page hash cut to its low 64 bits (events/block_hash.h), an
// unsigned 64-bit integer on the wire. lora_id and lora_name stay empty: radixkv keys adapters by
// namespace, which is folded into the hash. Applying a batch's events in order, batch after batch,
// gives the publisher's set of (medium, block) exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace radixkv::events {

using BlockHash = uint64_t;

struct BlockStored {
  std::vector<BlockHash> block_hashes;
  std::optional<BlockHash> parent_block_hash;
  std::vector<int64_t> token_ids;
  uint32_t block_size = 0;
  std::optional<int64_t> lora_id;
  std::optional<std::string> medium;
  std::optional<std::string> lora_name;
  friend bool operator==(const BlockStored&, const BlockStored&) = default;
};

struct BlockRemoved {
  std::vector<BlockHash> block_hashes;
  std::optional<std::string> medium;
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
