// BlockIndex: the router's global view of which worker holds which cached block, built from the
// workers' KV events (events/kv_event.h). The router service feeds it from ZeroMQ; an in-process
// simulation feeds it from EventBatchers directly. Not thread-safe: its owner serialises calls.
//
// Model. An entry per block hash: the hash of its parent block (as the BlockStored that brought it
// said), its holders — (worker, set of mediums) pairs — and how many present entries name it as
// their parent. A block is *present* while some worker holds it on some medium. Block hashes are
// chained (a block's hash covers the whole prefix through it), so a hash alone names a prefix.
//   BlockStored(w, medium, parent, hashes)  w holds each block on medium; hashes[i]'s parent is
//                                           hashes[i-1] (parent_block_hash for the first).
//   BlockRemoved(w, medium, hashes)         w no longer holds them on medium; a block no worker
//                                           holds leaves the index. Unknown blocks are ignored.
//   AllBlocksCleared(w)  / clear_worker(w)  w holds nothing.
//   overlaps(hashes)     for each worker, the number of leading blocks of `hashes` it holds on
//                        any medium (a request's prefix hit on that worker, in blocks).
//
// Memory bound. At most `max_pages` present entries. When a store goes past it, the index evicts
// leaves — present entries no present entry names as parent — least recently touched first (a
// touch: stored, or matched by overlaps()), ties by smaller hash, until it is back at the bound.
// Evicting a leaf forgets every holder of it (a later route may miss there; it never routes to a
// worker for a block the worker does not hold). Leaves go first so that what remains is still
// whole prefixes. An absent entry stays only while a present entry names it as parent (to count
// children), so the table holds at most 2 * max_pages entries.
//
// Invariants (verify() checks them): a present entry has >= 1 holder and every holder >= 1 medium;
// each worker's `held` set is exactly the entries it holds; children counts match the parent
// links of present entries; the leaf order holds exactly the present entries with no children.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "events/kv_event.h"

namespace radixkv::router {

using events::BlockHash;
using WorkerId = uint32_t;

struct BlockHolding {
  BlockHash hash = 0;
  std::vector<std::string> mediums;  // sorted; "" is a medium the events left unnamed (nil)
  friend bool operator==(const BlockHolding&, const BlockHolding&) = default;
};

class BlockIndex {
 public:
  // Throws std::invalid_argument when max_pages is 0.
  explicit BlockIndex(size_t max_pages = 1'000'000);

  // The worker's id, registering it on first use. Throws std::invalid_argument on an empty name.
  WorkerId add_worker(std::string_view name);
  std::optional<WorkerId> find_worker(std::string_view name) const;
  const std::string& worker_name(WorkerId worker) const;
  size_t num_workers() const { return workers_.size(); }

  // Throws std::invalid_argument for an unknown worker, or a 33rd distinct medium name.
  void apply(WorkerId worker, const events::KvEvent& event);
  void apply(WorkerId worker, const events::EventBatch& batch);
  void clear_worker(WorkerId worker);

  // Indexed by WorkerId: the leading blocks of `hashes` each worker holds. Touches the blocks
  // matched by at least one worker.
  std::vector<uint32_t> overlaps(std::span<const BlockHash> hashes);

  size_t max_pages() const { return max_pages_; }
  size_t pages() const { return present_; }
  size_t pages_of(WorkerId worker) const;
  uint64_t evicted_pages() const { return evicted_; }
  // The blocks `worker` holds, sorted by hash.
  std::vector<BlockHolding> holdings(WorkerId worker) const;

  // Throws std::logic_error naming the first broken invariant (see the header comment).
  void verify() const;

 private:
  struct Holder {
    WorkerId worker;
    uint32_t mediums;  // bit i: medium_names_[i]
  };
  struct Entry {
    std::optional<BlockHash> parent;
    boost::container::small_vector<Holder, 2> holders;  // empty: absent
    uint32_t children = 0;                              // present entries naming this as parent
    uint64_t touched = 0;
    bool present() const { return !holders.empty(); }
  };
  struct Worker {
    std::string name;
    std::unordered_set<BlockHash> held;
  };

  uint32_t medium_bit(const std::optional<std::string>& medium);
  void check_worker(WorkerId worker) const;
  void store(WorkerId worker, uint32_t medium, std::optional<BlockHash> parent, BlockHash hash);
  void remove(WorkerId worker, uint32_t mediums, BlockHash hash);
  void make_absent(BlockHash hash);
  void touch(BlockHash hash, Entry& entry);
  void evict_to_bound();

  size_t max_pages_;
  std::unordered_map<BlockHash, Entry> entries_;
  std::set<std::pair<uint64_t, BlockHash>> leaves_;  // (touched, hash) of present childless
  std::vector<Worker> workers_;
  std::vector<std::string> medium_names_;
  size_t present_ = 0;
  uint64_t tick_ = 0;
  uint64_t evicted_ = 0;
};

}  // namespace radixkv::router
