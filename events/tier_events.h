// TierEvents: what a radix tree with tiers tells an observer about every change of a page's tiers,
// in the order it applies them. A local mirror of the interface radix/tier_events.h declares with
// the tiers, so that the KV events build against it before the tiers land; when they do,
// EventBatcher implements that one and this file goes away.
//
//   stored(tier, ns, parent, hashes, tokens)  pages entered `tier`: `hashes` name consecutive pages
//       of one path, `parent` the page before the first (none at a namespace root), `tokens` are
//       those pages' tokens (hashes.size() * page_tokens of them).
//   removed(tier, hashes)                     pages left `tier` (they may stay on another one).
//   cleared()                                 every page left every tier.
//   flush()                                   the end of one runtime call: one batch per call.
// A consumer that applies stored/removed/cleared in order holds exactly the tree's pages per tier.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "events/chain_hash.h"

namespace radixkv::events {

enum class Tier : uint8_t { kDevice, kHost };

class TierEvents {
 public:
  virtual ~TierEvents() = default;
  virtual void stored(Tier tier, Namespace ns, std::optional<ChainHash> parent,
                      std::span<const ChainHash> hashes, std::span<const TokenId> tokens) = 0;
  virtual void removed(Tier tier, std::span<const ChainHash> hashes) = 0;
  virtual void cleared() = 0;
  virtual void flush() {}
};

}  // namespace radixkv::events
