// GdsfPolicy: Greedy-Dual-Size-Frequency over the prefill a node saves per page it holds.
//
// priority H = L + hits * cost_per_page, evicting the lowest H (least recent first among equals);
// L, the inflation, rises to the H of each victim, so entries that stop being hit age out.
// GDSF's cost / size is the prefill that the node's pages save divided by the pages they take.
// A page at depth d (pages before it on the path) costs its linear part plus attention over the
// d pages before it: cost(d) = 1 + d / depth_pages, so a node of `pages` pages under
// `prefix_pages` saves, per page, cost at its middle depth:
//   cost_per_page = 1 + (prefix_pages + pages / 2) / depth_pages.
// depth_pages is the depth at which attention doubles a page's cost (about 6 * d_model tokens for
// a dense transformer, in pages); infinity makes every page cost the same (plain GDSF by pages).
//
// State: the entry's hits and the tick of its last access, and its keys: score = H when the entry
// was last linked or touched, rank = last access. The pages a victim loses to tail truncation do
// not re-key it: it is the victim until it is gone anyway. O(log n) per operation.
#pragma once

#include <limits>

#include "eviction/ordered_policy.h"

namespace radixkv {

struct GdsfState {
  SetHook hook;
  uint64_t rank = 0;  // tick of the last access
  double score = 0.0;
  uint64_t hits = 0;
};

class GdsfPolicy final : public OrderedPolicy<GdsfState, ByScoreThenRank> {
 public:
  static constexpr double kDefaultDepthPages = 1024.0;
  // depth_pages > 0 (infinity allowed); throws std::invalid_argument otherwise.
  explicit GdsfPolicy(double depth_pages = kDefaultDepthPages);
  std::string_view name() const override { return "gdsf"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override;
  AccessHistory history(const EvictionEntry& entry) const override;
  void add(EvictionEntry& entry) override;
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;
  EvictionEntry* victim() override;
  double inflation() const { return inflation_; }
  double cost_per_page(const EvictionEntry& entry) const;
  // H as of the entry's last link or access.
  double score(const EvictionEntry& entry) const { return state(entry).score; }

 private:
  void set_score(EvictionEntry& entry) const;

  double depth_pages_;
  double inflation_ = 0.0;
};

}  // namespace radixkv
