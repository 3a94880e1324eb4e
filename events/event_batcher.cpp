#include "events/event_batcher.h"

#include "events/block_hash.h"

#include <chrono>
#include <stdexcept>
#include <string>

namespace radixkv::events {

namespace {

double system_clock_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

EventBatcher::EventBatcher(EventBatcherOptions options, Sink sink)
    : options_(std::move(options)), sink_(std::move(sink)) {
  if (options_.page_tokens == 0) throw std::invalid_argument("EventBatcher: page_tokens is 0");
  if (options_.device_medium.empty() || options_.host_medium.empty()) {
    throw std::invalid_argument("EventBatcher: a tier's medium name is empty");
  }
  if (options_.device_medium == options_.host_medium) {
    throw std::invalid_argument("EventBatcher: device and host tiers are both named \"" +
                                options_.device_medium +
                                "\"; a consumer could not tell them apart");
  }
  if (!sink_) throw std::invalid_argument("EventBatcher: no sink");
  if (!options_.clock) options_.clock = system_clock_seconds;
}

const std::string& EventBatcher::medium(Tier tier) const {
  return tier == Tier::kDevice ? options_.device_medium : options_.host_medium;
}

void EventBatcher::stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
                          std::span<const PageHash> hashes, std::span<const TokenId> tokens) {
  if (tokens.size() != hashes.size() * options_.page_tokens) {
    throw std::invalid_argument("EventBatcher::stored: " + std::to_string(hashes.size()) +
                                " pages of " + std::to_string(options_.page_tokens) +
                                " tokens need " +
                                std::to_string(hashes.size() * options_.page_tokens) +
                                " tokens, got " + std::to_string(tokens.size()));
  }
  if (hashes.empty()) return;
  BlockStored event;
  event.block_hashes.reserve(hashes.size());
  for (const PageHash& hash : hashes) event.block_hashes.push_back(block_hash(hash));
  if (parent) event.parent_block_hash = block_hash(*parent);
  event.token_ids.assign(tokens.begin(), tokens.end());
  event.block_size = options_.page_tokens;
  event.medium = medium(tier);
  if (!parent && ns != 0) {  // the path's first block says which namespace seeds its chain
    event.extra_keys.emplace(hashes.size());
    event.extra_keys->front() = namespace_extra_keys(ns);
  }
  pending_.emplace_back(std::move(event));
}

void EventBatcher::removed(Tier tier, std::span<const PageHash> hashes) {
  remove(tier, hashes, std::nullopt);
}

void EventBatcher::removed_because(Tier tier, std::span<const PageHash> hashes,
                                   RemovalReason reason) {
  remove(tier, hashes, std::string(to_string(reason)));
}

void EventBatcher::remove(Tier tier, std::span<const PageHash> hashes,
                          std::optional<std::string> reason) {
  if (hashes.empty()) return;
  BlockRemoved* last = pending_.empty() ? nullptr : std::get_if<BlockRemoved>(&pending_.back());
  if (last == nullptr || last->medium != medium(tier) || last->reason != reason) {
    pending_.emplace_back(
        BlockRemoved{.block_hashes = {}, .medium = medium(tier), .reason = std::move(reason)});
    last = &std::get<BlockRemoved>(pending_.back());
  }
  for (const PageHash& hash : hashes) last->block_hashes.push_back(block_hash(hash));
}

void EventBatcher::cleared() { pending_.emplace_back(AllBlocksCleared{}); }

void EventBatcher::flush() {
  if (pending_.empty()) return;
  EventBatch batch;
  batch.ts = options_.clock();
  batch.events = std::move(pending_);
  batch.data_parallel_rank = options_.data_parallel_rank;
  pending_.clear();
  ++batches_;
  sink_(std::move(batch));
}

}  // namespace radixkv::events
