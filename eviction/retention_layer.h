// RetentionLayer: retention hints and session holds (eviction/retention.h) around any policy,
// one mechanism for every policy. The runtime wraps its device policy in it when
// RuntimeConfig::retention is set; it forwards every call of the EvictionPolicy contract to the
// inner policy, which decides among the entries that have no standing.
//
// An entry's standing at time `now` (the latest caller's clock the layer has seen: set_now(),
// AccessHint::now and Retention::now; it never goes back):
//   hint  the merge of the retain() calls on it: active while its priority != kDefaultPriority
//         and its until > now. A retain() while the hint is active keeps the max of both priorities
//         and the max of both untils; otherwise it replaces the hint. A retain() at the default
//         priority changes no hint (it only names the entry its session's).
//   hold  active while the entry is the one its session's latest retain() named, that session's
//         hold (hold(session, until): the latest replaces the one before) has until > now, and
//         release(session) has not ended it. A hold ranks as config.hold_priority.
//   The standing's priority is the max over what is active, its deadline the earliest until of
//   what is active (when it next changes). Protected: priority > kDefaultPriority; demoted:
//   priority < kDefaultPriority; plain: nothing active.
// Plain entries are linked in the inner policy. Entries with a standing are not (the inner policy
// still hears every access of them and keeps their history, as it does for a pinned entry), and
// go back to it when their standing ends. The victim is, in this order:
//   1. a demoted entry: lowest priority first, then the latest deadline;
//   2. first, while protected pages > hold_share * linked pages, the protected entry that ranks
//      first (lowest priority, then the latest deadline) *spills*: it goes back to the inner
//      policy, ranked there as a plain entry, and stays until its standing changes (a new
//      priority or deadline: a retain, hold or release, or the clock passing its deadline), pinned
//      or not. So what the share cannot afford is evicted in the inner policy's order, never
//      before what the inner policy would evict without hints; the inner policy's victim;
//   3. a protected entry, in the order of 2: a standing never makes the cache refuse a page, so
//      holds can never starve admission (only with hold_share 1, or an inner policy that names
//      no victim).
// Ties of priority and deadline go to the entry that took that standing first.
// Expiry: entries with a standing (spilled ones too) are also ordered by deadline; victim() first
// re-ranks (or gives back to the inner policy) every entry whose deadline has passed, each at most
// once per retain, hold or release that set it: O(log n) each, no order rebuilt per eviction.
// Pages for the share: a linked entry counts the pages it had when it was linked, re-ranked,
// accessed or last named victim (the owner takes pages from the victim only; a split that moves a
// linked leaf's upper pages to a new parent is seen at the next of these).
// Sessions: per session named in a retain(), the layer keeps the stamp of its latest retain (an
// entry with an older stamp is no longer the session's), its hold's until, and its entry while
// that entry is linked: never a pointer to an unlinked entry, whose memory the owner frees without
// notice. A hold on an entry pinned by a request applies once it is linked again; hold() of a
// session never named is ignored; release() forgets the session.
// A split's upper part (adopt()) starts with no standing: it is an inner node, and the leaf below
// keeps its own.
// State: RetentionState (96 bytes) in front of the inner policy's state. Composes with layers
// that hold one inner policy per namespace: wrap each namespace's inner policy in its own
// RetentionLayer, or this layer around them; every layer forwards retain/hold/release.
#pragma once

#include <boost/intrusive/set.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "eviction/eviction_policy.h"

namespace radixkv {

struct RetentionConfig {
  // Protected pages beyond this share of the linked (evictable) pages spill back into the inner
  // policy's order (rule 2 above): (0, 1].
  double hold_share = 0.5;
  // The priority a session hold ranks as: (kDefaultPriority, kMaxPriority].
  int32_t hold_priority = kMaxPriority;
};

struct RetentionState {
  SetHook rank_hook;    // in protected_ or demoted_
  SetHook expiry_hook;  // in expiry_
  double hint_until = 0.0;
  double deadline = 0.0;  // of the standing (valid when ranked)
  uint64_t session = 0;   // the session whose retain named it (0: none)
  uint64_t order = 0;     // when it took its standing: ties
  uint64_t session_stamp = 0;
  uint32_t counted = 0;  // pages counted for the share
  uint8_t hint_priority = kDefaultPriority;
  uint8_t priority = kDefaultPriority;  // of the standing
  uint8_t place = 0;                    // Place
  bool spilled = false;  // the share spilled it at (priority, deadline): kSpilled while they hold
};

class RetentionLayer final : public EvictionPolicy {
 public:
  // Throws std::invalid_argument for a null inner policy or a config out of range.
  RetentionLayer(std::unique_ptr<EvictionPolicy> inner, const RetentionConfig& config = {});
  ~RetentionLayer() override;

  std::string_view name() const override { return inner_->name(); }
  std::size_t state_bytes() const override { return sizeof(RetentionState) + inner_bytes_; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override;
  AccessHistory history(const EvictionEntry& entry) const override {
    return inner_->history(entry);
  }
  void add(EvictionEntry& entry) override;
  void remove(EvictionEntry& entry) override;
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;
  EvictionEntry* victim() override;
  bool contains(const EvictionEntry& entry) const override;
  std::size_t size() const override;
  void retain(EvictionEntry& entry, const Retention& retention) override;
  void hold(uint64_t session, double until) override;
  void release(uint64_t session) override;
  void set_now(double now) override { now_ = std::max(now_, now); }

  // For tests and reports.
  const EvictionPolicy& inner() const { return *inner_; }
  const RetentionConfig& config() const { return config_; }
  std::size_t protected_entries() const { return protected_.size(); }
  std::size_t spilled_entries() const { return spilled_; }
  std::size_t demoted_entries() const { return demoted_.size(); }
  uint64_t protected_pages() const { return protected_pages_; }
  uint64_t linked_pages() const { return linked_pages_; }

 private:
  // kSpilled: protected, but linked in the inner policy (and in expiry_) since the share spilled
  // it.
  enum Place : uint8_t { kUnlinked, kInner, kProtected, kDemoted, kSpilled };
  struct ByRank {
    bool operator()(const RetentionState& a, const RetentionState& b) const {
      if (a.priority != b.priority) return a.priority < b.priority;
      if (a.deadline != b.deadline) return a.deadline > b.deadline;
      return a.order < b.order;
    }
  };
  struct ByDeadline {
    bool operator()(const RetentionState& a, const RetentionState& b) const {
      return a.deadline != b.deadline ? a.deadline < b.deadline : a.order < b.order;
    }
  };
  template <SetHook RetentionState::*Hook, typename Less>
  using Set = boost::intrusive::multiset<
      RetentionState, boost::intrusive::member_hook<RetentionState, SetHook, Hook>,
      boost::intrusive::compare<Less>, boost::intrusive::constant_time_size<true>>;
  struct SessionRecord {
    uint64_t stamp = 0;
    double hold_until = 0.0;
    EvictionEntry* linked = nullptr;  // the session's entry, while linked
  };
  struct Standing {
    uint8_t priority = kDefaultPriority;
    double deadline = 0.0;
  };

  RetentionState& state(const EvictionEntry& entry) const;
  EvictionEntry& entry_of(RetentionState& s) const;
  Standing standing(const RetentionState& s) const;
  // Puts a linked entry where its standing says (unlinking it from where it was).
  void rank(EvictionEntry& entry);
  void unplace(EvictionEntry& entry, RetentionState& s);
  void recount(EvictionEntry& entry, RetentionState& s);
  void expire();
  void spill();

  std::unique_ptr<EvictionPolicy> inner_;
  std::size_t inner_bytes_;
  RetentionConfig config_;
  double now_ = 0.0;
  uint64_t next_order_ = 0;
  uint64_t next_stamp_ = 0;  // of retain() calls naming a session: unique, so a stamp of a
                             // session released and named again never matches an old entry
  uint64_t protected_pages_ = 0;
  uint64_t linked_pages_ = 0;
  std::size_t spilled_ = 0;               // entries in kSpilled
  EvictionEntry* last_victim_ = nullptr;  // linked, or nullptr
  Set<&RetentionState::rank_hook, ByRank> protected_, demoted_;
  Set<&RetentionState::expiry_hook, ByDeadline> expiry_;
  std::unordered_map<uint64_t, SessionRecord> sessions_;
};

}  // namespace radixkv
