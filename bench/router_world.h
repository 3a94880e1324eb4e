// RouterWorld: what the router's benchmarks feed it — W workers, each caching prompts of
// `prompt_tokens` tokens that start with one of 16 shared system prompts of `system_tokens`, as
// vLLM publishes them: one BlockStored per prompt with the blocks it added (its tail below the
// system prompt), token_ids included, block hashes the engine's own (random 64-bit names, as
// SHA-256-derived integers look). Deterministic for a seed. Prompts are made one at a time, so a
// world of 10^6 blocks never holds them all.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "events/kv_event.h"
#include "radix/radix_node.h"

namespace radixkv::bench {

using events::BlockHash;

struct RouterWorldOptions {
  uint32_t workers = 8;
  uint64_t blocks = 1'000'000;  // in all, over the workers
  uint32_t block_tokens = 16;
  uint32_t prompt_tokens = 4096;
  uint32_t system_tokens = 1024;
  uint32_t system_prompts = 16;
  uint64_t seed = 1;
};

class RouterWorld {
 public:
  explicit RouterWorld(RouterWorldOptions options);

  const RouterWorldOptions& options() const { return options_; }
  // The fill, event by event: every worker's system prompts first, then its prompts, round robin
  // over the workers until `blocks` blocks are stored. False when done.
  bool next_fill(uint32_t& worker, events::BlockStored& event);
  // A request of prompt_tokens: a cached prompt of `worker` (hit: the whole prompt on it), a
  // system prompt then new tokens (hit: the system prompt on every worker), or new tokens (miss).
  enum class Query { kCached, kSystem, kMiss };
  std::vector<TokenId> query(Query kind, uint32_t worker, std::mt19937_64& rng) const;
  // A new prompt of `worker`: what a worker keeps publishing while the router serves routes.
  events::BlockStored churn(uint32_t worker);
  uint64_t blocks_stored() const { return stored_; }

 private:
  std::vector<TokenId> prompt(uint32_t worker, uint64_t index) const;
  events::BlockStored store(const std::vector<TokenId>& tokens, size_t from_block,
                            std::optional<BlockHash> parent);
  events::BlockStored next_prompt(uint32_t worker);

  RouterWorldOptions options_;
  std::vector<std::vector<TokenId>> system_;         // the shared system prompts
  std::vector<std::vector<BlockHash>> system_last_;  // [worker][system prompt]: its last block
  std::vector<uint64_t> prompts_;                    // per worker, the prompts stored
  std::mt19937_64 names_;                            // engine block hashes
  uint64_t stored_ = 0;
  uint64_t fill_step_ = 0;
};

}  // namespace radixkv::bench
