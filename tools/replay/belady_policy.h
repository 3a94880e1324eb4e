// BeladyPolicy: Belady's MIN over pages, the offline bound for cache-mode replay.
//
// MIN evicts the page whose next use lies farthest in the future. A request that uses a page uses
// every page before it on its path, so a parent's page is never next used later than its
// children's: the farthest unprotected page is always the tail page of an evictable leaf, and
// evicting leaves' tails in that order is MIN and leaf-consistent. It needs the whole trace in
// advance, which replay has (CacheReplayConfig::policy_factory), and the index of the request
// being replayed (CacheReplayConfig::before_request).
//
// NextUseIndex: a page's identity is its prefix: (namespace, the tokens of every page up to and
// including it), as a chained 64-bit hash. For every request r and page position p of its full
// pages it stores the next request after r whose prompt has the same identity at p (kNever if
// none). Built once from the trace: O(total pages log total pages) time, 4 bytes per page.
//
// The policy keeps, per entry, the last request that touched it (`toucher`): that request's prompt
// runs through the entry's whole edge, so the entry's tail page is (request, prefix_pages + pages -
// 1), and any later use of one of its pages would have touched it again. So the next use of the
// tail after the current request is exactly next_use(toucher, tail): O(1). Key: rank = that next
// use, the largest first. Tail truncation by the tree moves the tail up, which can only bring the
// next use earlier, so a key is exact or too large: victim() re-validates lazily (recompute the
// first; if it moved, re-link and look again), each re-link paid for by a truncation. O(log n) per
// operation.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "eviction/ordered_policy.h"
#include "tools/replay/cache_replay.h"
#include "tools/trace/trace.h"

namespace radixkv::tools {

inline constexpr std::string_view kBeladyPolicyName = "belady";

class NextUseIndex {
 public:
  static constexpr uint32_t kNever = ~uint32_t{0};
  NextUseIndex(const Trace& trace, uint32_t page_tokens);
  uint32_t page_tokens() const { return page_tokens_; }
  std::size_t requests() const { return first_.size() - 1; }
  uint32_t pages_of(uint32_t request) const { return first_[request + 1] - first_[request]; }
  // The next request after `request` whose prompt has the same page at `position` (same prefix,
  // same namespace), or kNever. Throws std::out_of_range for a position the prompt lacks.
  uint32_t next_use(uint32_t request, uint32_t position) const;

 private:
  uint32_t page_tokens_;
  std::vector<uint64_t> first_;  // per request, its first slot in next_; one extra at the end
  std::vector<uint32_t> next_;
};

struct BeladyState {
  SetHook hook;
  uint64_t rank = 0;     // key: the next use of the tail page, as of the last link
  uint32_t toucher = 0;  // the last request that touched the entry
};

// Orders by next use, farthest first; ties keep arrival order.
struct ByNextUseFarthest {
  bool operator()(const BeladyState& a, const BeladyState& b) const { return a.rank > b.rank; }
};

class BeladyPolicy final : public OrderedPolicy<BeladyState, ByNextUseFarthest> {
 public:
  explicit BeladyPolicy(std::shared_ptr<const NextUseIndex> index) : index_(std::move(index)) {}
  std::string_view name() const override { return kBeladyPolicyName; }
  // A past holds no request index: the entry counts as touched by request 0 until its next access,
  // unless it is new (no access yet): then the request that made it, the one running, whose
  // prompt runs through it. (A node made without an access, as a remote load makes one, may be
  // linked before its first access.)
  void adopt(EvictionEntry& entry, const AccessHistory& past) override {
    make_state<BeladyState>(entry).toucher = past.hits == 0 && past.last.tick == 0 ? current_ : 0;
  }
  // The replay is about to run request `index` (trace order, from 0).
  void begin_request(uint32_t index) { current_ = index; }
  void add(EvictionEntry& entry) override;
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;
  EvictionEntry* victim() override;
  // Next use of the entry's tail page after the current request (NextUseIndex::kNever if none).
  uint32_t next_use(const EvictionEntry& entry) const;

 private:
  std::shared_ptr<const NextUseIndex> index_;
  uint32_t current_ = 0;
};

// Makes `config` replay with BeladyPolicy over `index` (built for the same trace and page size).
void use_belady(CacheReplayConfig& config, std::shared_ptr<const NextUseIndex> index);

}  // namespace radixkv::tools
