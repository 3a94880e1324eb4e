// QuotaPolicy: per-namespace (tenant) min and max shares of the device budget, over any policy.
//
// It keeps one inner policy per namespace that has a quota, and one more, shared, for every
// other namespace; all are made by the same factory (so a wrapped policy stays wrapped in each).
// An entry goes to the inner policy of its namespace, which the owner tells through a
// NamespaceLedger (the namespace of an entry, and the cached pages of a namespace, pinned ones
// included). The inner policies order the entries within their namespaces; the layer decides
// only which namespace gives the next victim, by this rule, asked before every page
// (victim_stays_first() is false: a namespace's standing changes as its pages leave):
//   cached(q)  = the ledger's cached pages of quota namespace q; min(q) <= max(q) in pages.
//   1. Over max first: among quota namespaces with cached(q) >= max(q) and an evictable entry,
//      the one with the largest cached(q) - max(q) (ties: the smaller namespace id) gives its
//      inner policy's victim. "A tenant at its max evicts its own pages first."
//   2. Otherwise the candidates are the inner victims of the shared group and of every quota
//      namespace with cached(q) > min(q); the one whose last access is oldest goes (the tick of
//      the owner's clock the layer keeps per entry: AccessHistory::last.tick at adopt(), then
//      AccessHint::tick at each access). Ties: quota namespaces by id, then the shared group.
//      With LRU inside, rule 2 is exactly the single LRU's order over the eligible namespaces.
//   3. A quota namespace at or under its min is never a victim, whoever's pressure it is: when
//      every evictable entry belongs to one, victim() is nullptr, the owner releases nothing,
//      and an allocation reports no space (BudgetedAllocator: kNoSpace), as when all is pinned.
// Max is a soft cap, like the watermarks: a namespace may pass it while the cache has room, and
// gives its own pages first once anything is evicted.
// Rule 2 asks each eligible inner policy for its victim (victim()) and takes one: a policy that
// records something per call (reuse counts every page it names) sees the others' calls too.
// Cost: O(number of quota namespaces) per victim, plus the inner policies'.
//
// State: [QuotaState (16 bytes)][inner state][entry]: the inner policies find theirs right
// before the entry, as without the layer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "eviction/cache_budget.h"
#include "eviction/eviction_policy.h"

namespace radixkv {

// What the quota layer needs from the owner of the entries (the radix tree's runtime).
class NamespaceLedger {
 public:
  virtual ~NamespaceLedger() = default;
  // The namespace of an entry being adopted (called once per adopt()).
  virtual uint64_t namespace_of(const EvictionEntry& entry) const = 0;
  // Cached pages of namespace `ns` now, pinned ones included.
  virtual uint64_t namespace_pages(uint64_t ns) const = 0;
};

// One namespace's quota in pages.
struct QuotaPages {
  uint64_t name_space = 0;
  uint64_t min_pages = 0;
  uint64_t max_pages = UINT64_MAX;
};

// One namespace's quota as given (RuntimeConfig::quotas): min and max as fractions of the device
// budget or sizes, each turned into pages by CacheBudget's rule (a fraction f: floor(limit * f);
// a size: its whole pages), but min may be 0.
struct NamespaceQuota {
  uint64_t name_space = 0;
  Watermark min = 0.0;
  Watermark max = 1.0;
};

// The quotas in pages over `budget`. Throws std::invalid_argument naming the namespace and the
// reason: a fraction outside [0, 1] (max: (0, 1]), a size above the budget, min above max, a
// namespace given twice, or mins that add up to more than the budget.
std::vector<QuotaPages> quota_pages(const std::vector<NamespaceQuota>& quotas,
                                    const CacheBudget& budget, uint64_t bytes_per_page);

class QuotaPolicy final : public EvictionPolicy {
 public:
  using Factory = std::function<std::unique_ptr<EvictionPolicy>()>;
  // Throws std::invalid_argument for a namespace given twice or min_pages > max_pages.
  QuotaPolicy(const Factory& make_inner, std::vector<QuotaPages> quotas);
  // Before the first adopt(); must outlive the policy.
  void attach(const NamespaceLedger* ledger) { ledger_ = ledger; }

  std::string_view name() const override { return name_; }
  std::size_t state_bytes() const override { return state_bytes_; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override;
  AccessHistory history(const EvictionEntry& entry) const override;
  void add(EvictionEntry& entry) override;
  void remove(EvictionEntry& entry) override;
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;
  EvictionEntry* victim() override;
  bool contains(const EvictionEntry& entry) const override;
  std::size_t size() const override { return size_; }
  // Retention (eviction/retention.h) goes to the entry's group; a hold or a release to every
  // group, since a session's path lies in one namespace but the layer does not know which; the
  // clock to every group.
  void retain(EvictionEntry& entry, const Retention& retention) override;
  void hold(uint64_t session, double until) override;
  void release(uint64_t session) override;
  void set_now(double now) override;

  const std::vector<QuotaPages>& quotas() const { return quotas_; }
  // The inner policy of quota i (in quotas() order), and at i == quotas().size() the shared
  // group's: for reports (the runtime's metrics read each group's retention layer).
  const EvictionPolicy& group_policy(std::size_t i) const { return *policies_.at(i); }

 private:
  struct Group {
    EvictionPolicy* policy;
    const QuotaPages* quota;  // nullptr: the shared group
  };
  struct QuotaState {
    Group* group;
    uint64_t tick;  // the owner's clock at the entry's last access
  };
  QuotaState& state(const EvictionEntry& entry) const;

  std::vector<QuotaPages> quotas_;                         // by namespace id
  std::vector<std::unique_ptr<EvictionPolicy>> policies_;  // one per quota, then the shared one
  std::vector<Group> groups_;                              // as policies_
  std::unordered_map<uint64_t, Group*> by_namespace_;
  const NamespaceLedger* ledger_ = nullptr;
  std::string name_;
  std::size_t inner_bytes_ = 0, state_bytes_ = 0, size_ = 0;
};

}  // namespace radixkv
