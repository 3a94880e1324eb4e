// The private parts of RadixTree that several of its source files share: the host tier's state
// and the event buffer. Not part of the interface; included only by radix/*.cpp.
#pragma once

#include <deque>
#include <utility>
#include <vector>

#include "radix/radix_tree.h"

namespace radixkv {

struct RadixTree::HostTier {
  HostTier(PagePool& pool, PageCopier& copier, std::unique_ptr<EvictionPolicy> policy,
           CacheBudget budget, WritePolicy write)
      : pool(pool),
        copier(copier),
        policy(std::move(policy)),
        budget(budget),
        write(write),
        limit_pages(std::min<uint64_t>(budget.limit_pages(), pool.capacity_pages())),
        in_tree(pool.capacity_pages(), false) {}

  PagePool& pool;
  PageCopier& copier;
  std::unique_ptr<EvictionPolicy> policy;
  CacheBudget budget;
  WritePolicy write;
  uint64_t limit_pages;  // cached host pages the budget allows (at most the pool)
  // Per host page, by page - pool.first_page() (a partition's first id need not be 0): through
  // indexed() and hash() only.
  std::vector<bool> in_tree;     // indexed by the tree
  std::vector<PageHash> hashes;  // its hash, when page hashes are on
  std::vector<bool>::reference indexed(PageId page) { return in_tree[page - pool.first_page()]; }
  bool indexed(PageId page) const { return in_tree[page - pool.first_page()]; }
  PageHash& hash(PageId page) { return hashes[page - pool.first_page()]; }
  const PageHash& hash(PageId page) const { return hashes[page - pool.first_page()]; }
  uint64_t cached = 0;  // host pages indexed
  uint64_t pinned = 0;  // host-only pages of locked nodes
  // Host pages held only by a running copy (load sources under write-back), in issue order.
  std::deque<std::pair<CopyTicket, PageId>> in_flight;
  CopyTicket last_ticket = 0;  // the latest copy the tree issued
  CopyTicket last_load = 0;    // the latest load
  // Scratch for one batch of copies, reused across calls.
  std::vector<PageTransfer> transfers;
  std::vector<PageId> sources;  // device pages to release once the batch is done
  std::vector<PageId> fresh;    // host pages set aside for the batch
};

// Batches consecutive removals of one tier into one removed() event; everything else goes through
// at once, after the removals before it.
class RadixTree::EventBuffer {
 public:
  explicit EventBuffer(TierEvents& sink) : sink_(sink) {}
  TierEvents& sink() { return sink_; }
  void stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
              std::span<const PageHash> hashes, std::span<const TokenId> tokens) {
    send_removed();
    sink_.stored(tier, ns, parent, hashes, tokens);
  }
  void removed(Tier tier, const PageHash& hash) {
    if (!removed_.empty() && tier != removed_tier_) send_removed();
    removed_tier_ = tier;
    removed_.push_back(hash);
  }
  void cleared() {
    send_removed();
    sink_.cleared();
  }
  void flush() {
    send_removed();
    sink_.flush();
  }
  std::vector<PageHash>& scratch() { return scratch_; }

 private:
  void send_removed() {
    if (removed_.empty()) return;
    sink_.removed(removed_tier_, removed_);
    removed_.clear();
  }

  TierEvents& sink_;
  Tier removed_tier_ = Tier::kDevice;
  std::vector<PageHash> removed_;
  std::vector<PageHash> scratch_;
};

}  // namespace radixkv
