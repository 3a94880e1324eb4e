// BlockIndex: the router's global view of which worker holds which cached block, built from the
// workers' KV events (events/kv_event.h) and keyed by the blocks' content. The router service feeds
// it from ZeroMQ; the cluster replay feeds it from EventBatchers directly. Not thread-safe: its
// owner serialises calls.
//
// Keys. Every block is keyed by its content (router/block_key.h): the chained page hash of its
// tokens, from the BlockStored's token_ids, chained from its parent's key. Per worker, a map from
// the engine's block hash to the block's key (and chained hash) lets a BlockRemoved by engine hash
// find the block, and the next BlockStored chain from its parent. A block whose content cannot be
// computed is *opaque*, keyed by its engine hash: one without token_ids (or whose token_ids do not
// fill block_size, or hold ids past 32 bits), one whose parent the worker's map does not know (a
// parent never stored, or forgotten), and every block chained below an opaque one. Routing by
// engine hashes finds opaque blocks; routing by tokens only finds content keys. A radixkv block's
// key is its published hash, so radixkv workers and the cluster replay route as before.
//
// Model. An entry per key: its parent's key, its holders — (worker, set of locations) — and how
// many present entries name it as parent. A location is a (medium, group_idx) pair, registered per
// worker, at most 32 per worker (a bit each). A block is *present* while some worker holds it
// somewhere.
//   BlockStored(w, location, parent, blocks)  w holds each block there. A content block names its
//                       parent's key as parent when that entry is present; an opaque block names
//                       none (engine hashes are the publisher's to choose: they could name a
//                       cycle). An engine hash the worker re-stores with other content first drops
//                       what it named before. A store at a 33rd location of the worker, and one of
//                       more blocks than the bound, are skipped (refused_blocks): a missed store
//                       only makes the index miss blocks. A content block of a 5th block size of
//                       the worker is kept as opaque.
//   BlockRemoved(w, location, hashes)  w no longer holds them there; unknown ones are ignored.
//   AllBlocksCleared(w) / clear_worker(w)  w holds nothing; its map and registries are emptied.
//
// Matching. A worker's overlap with a request is its leading blocks that it holds somewhere: by
// engine hashes (each worker's own), or by tokens, at the block sizes the workers use (the 8 most
// held, which bounds a match's work whatever sizes a publisher sends), taking per token the best
// match of any size (vLLM's GPU blocks of 16 beside LMCache's CPU chunks of 256, say). Each matched
// block also counts its best location's weight (router/tier_weights.h). Matching touches the blocks
// matched by at least one worker.
//
// Memory bound. At most `max_pages` present entries. After every stored block over the bound, the
// index evicts leaves — present entries no present entry names as parent — least recently touched
// first (a touch: stored, or matched), until it is back at the bound; with no leaf (only a
// parent cycle, which needs a 64-bit key collision), the block just stored. Evicting forgets every
// holder of the entry and their map entries. An absent entry stays only while a present entry names
// it as parent, so the table holds at most 2 * max_pages entries; each worker's map at most
// 2 * (its held blocks) + 1024 (aliases — two engine hashes of one content — are swept past that).
//
// Invariants (verify() checks them): a present entry has >= 1 holder and every holder >= 1
// location; each worker's held count is the entries it holds, and its map names each of them by
// the engine hash the holder records; children counts match the parent links of present entries;
// the leaf order holds exactly the present entries with no children; present <= max_pages.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "events/kv_event.h"
#include "router/block_key.h"
#include "router/tier_weights.h"

namespace radixkv::router {

using events::BlockHash;
using WorkerId = uint32_t;

struct BlockHolding {
  BlockHash hash = 0;                // the engine's
  std::vector<std::string> mediums;  // sorted; "" a nil medium; "NAME#g" for group_idx g
  friend bool operator==(const BlockHolding&, const BlockHolding&) = default;
};

// One worker's match with a request, in blocks (by engine hashes) or tokens (by tokens).
struct Overlap {
  double length = 0;    // the leading part it holds anywhere
  double weighted = 0;  // the same, each block counted at its best location's weight
  friend bool operator==(const Overlap&, const Overlap&) = default;
};

class BlockIndex {
 public:
  static constexpr uint32_t kMaxLocations = 32;    // per worker
  static constexpr uint32_t kMaxMatchedSizes = 8;  // block sizes a token match tries
  static constexpr size_t kDone = ~size_t{0};      // apply_part(): the event is applied

  // Throws std::invalid_argument when max_pages is 0.
  explicit BlockIndex(size_t max_pages = 1'000'000, TierWeights weights = {});

  // The worker's id, registering it on first use. Throws std::invalid_argument on an empty name.
  WorkerId add_worker(std::string_view name);
  std::optional<WorkerId> find_worker(std::string_view name) const;
  const std::string& worker_name(WorkerId worker) const;
  size_t num_workers() const { return workers_.size(); }

  // Throw std::invalid_argument for an unknown worker.
  void apply(WorkerId worker, const events::EventBatch& batch);
  void apply(WorkerId worker, const events::KvEvent& event);
  // Applies the blocks [from, from + max_blocks) of a BlockStored or BlockRemoved (all of an
  // AllBlocksCleared); returns where to go on, or kDone. Applying an event part by part is applying
  // it whole: the router service lets routes in between parts.
  size_t apply_part(WorkerId worker, const events::KvEvent& event, size_t from, size_t max_blocks);
  void clear_worker(WorkerId worker);

  // Indexed by WorkerId: the leading blocks of `keys` (content keys) each worker holds.
  std::vector<uint32_t> overlaps(std::span<const BlockKey> keys);
  // Indexed by WorkerId, in blocks: the leading blocks of `hashes` (engine hashes, each worker's
  // own names) each worker holds.
  std::vector<Overlap> match_hashes(std::span<const BlockHash> hashes);
  // Indexed by WorkerId, in tokens: the leading tokens each worker holds, at any block size.
  std::vector<Overlap> match_tokens(const KeyNamespace& ns, std::span<const TokenId> tokens);

  size_t max_pages() const { return max_pages_; }
  size_t pages() const { return present_; }
  size_t pages_of(WorkerId worker) const;
  uint64_t evicted_pages() const { return evicted_; }
  uint64_t refused_blocks() const { return refused_; }
  // The block sizes matched by tokens, most held first, with how many present entries have each.
  std::vector<std::pair<uint32_t, size_t>> block_sizes() const;
  // The blocks `worker` holds, by the engine hashes it named them, sorted by hash.
  std::vector<BlockHolding> holdings(WorkerId worker) const;

  // Throws std::logic_error naming the first broken invariant (see the header comment).
  void verify() const;

 private:
  struct Holder {
    WorkerId worker;
    uint32_t locations;  // bit i: the worker's locations[i]
    BlockHash engine;    // the engine hash the worker named it by last
  };
  struct Entry {
    BlockKey parent = 0;
    bool has_parent = false;
    uint32_t block_tokens = 0;                          // 0: opaque (keyed by engine hash)
    boost::container::small_vector<Holder, 2> holders;  // empty: absent
    uint32_t children = 0;                              // present entries naming this as parent
    uint64_t touched = 0;
    bool present() const { return !holders.empty(); }
  };
  struct Location {
    std::optional<std::string> medium;
    std::optional<int64_t> group;
    double weight = 1;
  };
  struct Named {     // what the worker's engine hash names
    PageHash chain;  // content: the chained hash (key = its low half); opaque: {hash, 0}
    bool opaque = false;
  };
  struct Worker {
    std::string name;
    std::unordered_map<BlockHash, Named> blocks;  // engine hash -> block
    std::vector<Location> locations;
    size_t held = 0;
  };
  struct Walk;  // a request's keys walked against the entries, worker by worker

  static size_t holder_of(const Entry& entry, WorkerId worker);  // index, or ~0 when none
  void check_worker(WorkerId worker) const;
  std::optional<uint32_t> location_bit(Worker& w, const std::optional<std::string>& medium,
                                       const std::optional<int64_t>& group);
  void store_part(WorkerId worker, const events::BlockStored& stored, size_t from, size_t end);
  void store(WorkerId worker, uint32_t location, BlockHash engine, const Named& named,
             uint32_t block_tokens, std::optional<BlockKey> parent);
  void remove(WorkerId worker, uint32_t locations, BlockHash engine);
  void drop_holder(BlockKey key, Entry& entry, size_t holder);
  void make_absent(BlockKey key);
  void touch(BlockKey key, Entry& entry);
  void evict_to_bound(BlockKey just_stored);
  void count_size(uint32_t block_tokens, int delta);
  void sweep_aliases(Worker& w);
  double best_weight(const Worker& w, uint32_t locations) const;
  static std::string location_name(const Location& location);

  size_t max_pages_;
  TierWeights weights_;
  std::unordered_map<BlockKey, Entry> entries_;
  std::set<std::pair<uint64_t, BlockKey>> leaves_;  // (touched, key) of present childless
  std::vector<Worker> workers_;
  // Content blocks held (a holder each) by block size, and the sizes most held first.
  struct MostHeld {
    bool operator()(const std::pair<size_t, uint32_t>& a,
                    const std::pair<size_t, uint32_t>& b) const {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    }
  };
  std::unordered_map<uint32_t, size_t> size_counts_;
  std::set<std::pair<size_t, uint32_t>, MostHeld> size_order_;  // (count, size)
  size_t present_ = 0;
  uint64_t tick_ = 0;
  uint64_t evicted_ = 0;
  uint64_t refused_ = 0;
  std::vector<TokenId> tokens_;  // scratch: a block's tokens as 32-bit ids
};

}  // namespace radixkv::router
