// ScriptedCache: a stand-in for one worker's tiered prefix cache that drives a TierEvents observer
// (radix/tier_events.h) with a reproducible random stream of changes, and knows the page set that
// stream leaves: the truth a consumer of the events must rebuild.
//
// The model is a forest of pages (namespace, parent, one page of tokens), each on the device tier,
// the host tier or both. One step() is one runtime call — a few changes, then flush():
//   - store: a chain of 1-3 new pages below a random page, or at a namespace root starting with
//     one of a few shared "system prompt" pages (equal on every worker built with the same
//     template seed, so that workers share blocks); pages of the chain already cached but not on
//     the device come back to it. Emitted as stored(device, parent, run) per run of pages.
//   - offload: a device page with no device child goes to the host (stored(host)) and leaves the
//     device (removed(device)); or, with no host copy and no child at all, leaves the cache.
//   - drop: a host-only page with no child leaves the cache (removed(host)).
//   - clear (only when enabled): every page leaves (cleared()).
// pin_prefix() stores a fixed chain first and never offloads or drops it (a prefix the tests
// route to). The model keeps the trie's invariant that a page's parent is cached while it is.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "events/kv_event.h"
#include "radix/tier_events.h"

namespace radixkv::testing {

struct ScriptOptions {
  uint64_t seed = 1;
  uint64_t template_seed = 7;  // the shared system-prompt pages
  uint32_t page_tokens = 4;
  uint32_t namespaces = 2;
  uint32_t max_pages = 64;  // offloads and drops win once the cache holds more
  bool clears = false;
};

// (medium, block hash): what vLLM's events say a worker holds.
using MediumBlock = std::pair<std::string, uint64_t>;

// The reference consumer: applies a batch's events, in order, to a set of (medium, block); a nil
// medium is "".
void apply_events(std::set<MediumBlock>& held, const events::EventBatch& batch);

// msgpack bytes of a random extra-key tuple of the kinds vLLM builds.
events::ExtraKeys random_extra_keys(std::mt19937_64& rng);
// A batch of up to 5 random events of every kind, every optional field sometimes set.
events::EventBatch random_event_batch(std::mt19937_64& rng);

class ScriptedCache {
 public:
  ScriptedCache(ScriptOptions options, TierEvents& observer);

  // Stores `pages` pages of tokens base, base+1, ... in namespace ns at the root, pinned. Flushes.
  std::vector<TokenId> pin_prefix(Namespace ns, uint32_t pages, TokenId base);
  void step();

  // The pages on each tier, as (medium, block hash) with the device tier named `device` and the
  // host tier `host`.
  std::set<MediumBlock> truth(const std::string& device = "GPU",
                              const std::string& host = "CPU") const;
  size_t pages() const { return pages_.size(); }

 private:
  struct Page {
    Namespace ns = 0;
    std::optional<PageHash> parent;
    std::vector<TokenId> tokens;
    bool device = false, host = false, pinned = false;
  };

  void store_chain();
  void make_resident(Namespace ns, std::optional<PageHash> parent,
                     const std::vector<std::vector<TokenId>>& chain, bool pinned);
  void offload_one();
  void drop_one();
  bool has_child(const PageHash& hash, bool device_only) const;
  template <typename Pred>
  std::vector<PageHash> pick(Pred pred) const;

  ScriptOptions options_;
  TierEvents& observer_;
  std::mt19937_64 rng_;
  std::map<PageHash, Page> pages_;
  std::vector<std::vector<TokenId>> templates_;
};

}  // namespace radixkv::testing
