// EventBatcher: turns a tree's tier events (radix/tier_events.h) into vLLM KV event batches
// (events/kv_event.h), one batch per flush() — that is, per runtime call — and hands each to a
// sink: a ZmqEventPublisher's publish(), or an in-process consumer such as a router's BlockIndex.
//
//   stored   -> BlockStored{block hashes = low 64 bits of the page hashes, parent likewise,
//               token_ids, block_size = page_tokens, medium = the tier's name, lora_* = nil,
//               extra_keys = [(ns,), nil...] at the root of a namespace other than 0, else nil
//               (events/block_hash.h)}
//   removed  -> BlockRemoved{block hashes, medium, reason (removed_because: RemovalReason's name;
//               removed: none)}; a removal right after another removal from the same tier for the
//               same reason joins it (the same change, one event instead of one per page)
//   cleared  -> AllBlocksCleared
//   flush    -> the batch {ts = clock(), events, data_parallel_rank} goes to the sink, unless it
//               is empty (a call that changed nothing publishes nothing)
//
// Tier names default to vLLM's mediums: device "GPU", host "CPU". Not thread-safe: it is called
// by the thread that owns the tree, like the tree itself.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "events/kv_event.h"
#include "radix/tier_events.h"

namespace radixkv::events {

struct EventBatcherOptions {
  uint32_t page_tokens = 16;  // vLLM's block_size
  std::string device_medium = "GPU";
  std::string host_medium = "CPU";
  int64_t data_parallel_rank = 0;
  // Seconds since the Unix epoch; the system clock unless a test sets one.
  std::function<double()> clock;
};

class EventBatcher final : public TierEvents {
 public:
  using Sink = std::function<void(EventBatch&&)>;
  // Throws std::invalid_argument when page_tokens is 0, a medium name is empty, both tiers have
  // the same name (a consumer could not tell them apart), or the sink is empty.
  EventBatcher(EventBatcherOptions options, Sink sink);

  void stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
              std::span<const PageHash> hashes, std::span<const TokenId> tokens) override;
  void removed(Tier tier, std::span<const PageHash> hashes) override;
  void removed_because(Tier tier, std::span<const PageHash> hashes, RemovalReason reason) override;
  void cleared() override;
  void flush() override;

  size_t pending_events() const { return pending_.size(); }
  uint64_t batches_flushed() const { return batches_; }

 private:
  const std::string& medium(Tier tier) const;
  void remove(Tier tier, std::span<const PageHash> hashes, std::optional<std::string> reason);

  EventBatcherOptions options_;
  Sink sink_;
  std::vector<KvEvent> pending_;  // events since the last flush
  uint64_t batches_ = 0;
};

}  // namespace radixkv::events
