// RemotePages: a tier below the local ones, as the runtime uses it (remote/remote_tier.h is the
// Redis one). Not in the trie: pages are looked up by their chain hash (radix/page_hash.h) after
// the local match, and written when they leave the lowest local tier (TierEvents::dropping: the
// runtime adds the tier to the tree's observers, radix/tier_events.h), or, writing through, when
// they are cached (TierEvents::inserted).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kv_store/page_pool.h"
#include "radix/tier_events.h"

namespace radixkv {

// Pages whose bytes may still be on their way (a copy writing them: a remote load staged through
// the host tier, runtime/remote_staging.h). Whoever reads a page's bytes outside the runtime's
// copies asks first.
class PageArrivals {
 public:
  virtual ~PageArrivals() = default;
  // Returns once page `page` of `tier`'s pool holds its bytes (at once when no copy writes it).
  virtual void await(Tier tier, PageId page) = 0;
};

// What a tier below the local ones counts, for the runtime's metrics (runtime/runtime_metrics.h;
// docs/metrics.md lists the families). Counters count since the tier was opened (the runtime
// reports what they gained since it attached), gauges are the tier's now.
struct LowerTierMetrics {
  // The `tier` label: "disk", "remote" (never "device" or "host"), one per tier; a string that
  // outlives the tier (a literal).
  std::string_view tier;
  uint64_t loaded_pages = 0;   // pages load() returned: each a hit of page_tokens tokens
  uint64_t written_pages = 0;  // writes completed (the drive or the store has the page)
  uint64_t evicted_pages = 0;  // pages the tier evicted to make room (0 where the store decides)
  uint64_t read_bytes = 0;     // bytes load() read (has_bytes)
  uint64_t written_bytes = 0;  // bytes the completed writes wrote (has_bytes)
  uint64_t load_wait_ns = 0;   // time load() waited for the tier (the caller stalled)
  // Where the tier counts bytes (a remote store keeps or drops keys itself, and sizes them): the
  // bytes it read and wrote (above), its pages take now, and the most they may take.
  bool has_bytes = false;
  uint64_t stored_bytes = 0;
  uint64_t capacity_bytes = 0;
};

// LowerTierMetrics' counters (monotonic since the tier opened), for code that adds or subtracts
// them all; the gauges (stored_bytes, capacity_bytes) are not among them.
inline constexpr std::array<uint64_t LowerTierMetrics::*, 6> kLowerTierCounters = {
    &LowerTierMetrics::loaded_pages,  &LowerTierMetrics::written_pages,
    &LowerTierMetrics::evicted_pages, &LowerTierMetrics::read_bytes,
    &LowerTierMetrics::written_bytes, &LowerTierMetrics::load_wait_ns};

class RemotePages : public TierEvents {
 public:
  // The leading run of pages named by `hashes` (page i's parent is hashes[i-1], the first's
  // `parent`; its tokens tokens[i*P, (i+1)*P)) that the tier holds and that check out, with their
  // bytes copied into `pages` of `pool` (when the pool has bytes). Returns how many. Must not
  // throw for a failure of the store behind it (that is a miss), nor block past its timeout.
  virtual uint32_t load(const PageHash& parent, std::span<const PageHash> hashes,
                        std::span<const TokenId> tokens, PagePool& pool,
                        std::span<const PageId> pages) = 0;
  // Starts looking up, in the background, the pages `hashes` names (those after a queued request's
  // local match), so that a later load() of them need not wait for the store. Never blocks on
  // the store, never throws for its failure. By default nothing.
  virtual void prefetch(std::span<const PageHash> /*hashes*/) {}
  // The pools whose pages dropping() names (nullptr: no such tier), and whom to ask before reading
  // a page's bytes (nullptr: they are always there). Throws std::invalid_argument for a pool the
  // tier cannot read.
  virtual void attach_pools(PagePool* device, PagePool* host, PageArrivals* arrivals = nullptr) = 0;
  // Appends what the tier counts (one entry per tier: LowerTiers appends each of its own). By
  // default nothing: its hits then count as remote ones.
  virtual void add_metrics(std::vector<LowerTierMetrics>& /*out*/) const {}
  // Blocks until every write queued so far has completed (or failed), so that counters read next
  // include them. By default nothing (a tier that writes synchronously).
  virtual void drain() {}
};

}  // namespace radixkv
