// ReusePolicy: evicts the page least likely to be reused within the cache's horizon, by a reuse
// rate that it learns online for each class of request.
//
// The model (after the ATC'25 study of a cloud provider's KV cache, "KVCache Cache in the Wild":
// reuse is predictable per request category and its probability decays roughly exponentially
// with the time since the last use). Pages of class c are reused at rate rate_c. What keeping a
// page is worth is the chance that it is reused before the cache would evict it anyway, within
// its horizon tau:
//     p_c = 1 - exp(-rate_c * tau),
// and that chance fades with the time since the page's last use: a page of class c last used
// `age` seconds ago is worth p_c * exp(-age / tau). Evicting the lowest such value is evicting
// the lowest key
//     score = last_access_s + tau * clamp(ln(p_c / p_all), -limit, limit),
// which does not change while the entry sits in the set (p_all: the same for the rate over every
// class). Within a class the order is LRU; a class whose pages are rarely reused within the
// horizon goes first, one that is reused within it stays longer.
//
// Why the probability and not the rate: two classes whose pages are both reused within the
// horizon are worth keeping alike, however different their rates. Agent steps seconds apart and
// chat turns minutes apart, in a cache whose horizon is longer than both, have p near 1 and keep
// LRU's order; ranked by rate, the chat pages would be evicted before their next turn (on the
// generated mix of chats and agent loops that cost up to 2 points of hit rate against LRU, which
// is why the first version of this policy clamped its shift to +-0.5 tau). Where a class is
// rarely reused at all (the long answers of the Mooncake sample: 1 page in 15), p_c is far below
// the average and its pages go first, almost as if they were not admitted.
//
//   class    the bit width of the answer length of the latest access (AccessHint::
//            output_tokens; 0 = not known), and whether the entry
//            is the head of its prompts (it hangs from the root: prefix_pages == 0) or continues
//            one. On the Mooncake sample the answer length tells document questions (short
//            answers, asked again and again) from chat (long answers, rarely repeated); on
//            multi-turn chat the head holds the popular system prompts. docs/policies.md has the
//            numbers. Classes learn their rates independently; nothing says which is worth more.
//            An answer's length is known once the request finishes, which in cache-mode replay
//            (one request at a time) is before the next one starts; a caller that does not know
//            it passes 0, and its entries share the "not known" class.
//   rate_c   reuses per page-second in the cache, counted online: an access to an entry whose
//            previous access came from class c at an earlier time adds `pages` reuses and
//            pages * (time since then) of exposure to c; each evicted page adds its age to the
//            exposure of its class. rate_all is the same over every class. A class starts at
//            rate_all and moves to its own rate as data comes: `prior` pages of pseudo-reuses,
//                rate_c = (reuses_c + prior) / (exposure_c + prior / rate_all).
//   tau      the age of recent victims (a moving average over about 1,024 evicted pages): the
//            cache's own time scale, so neither the clock's unit nor the trace's rate enters, and
//            the defaults serve every workload.
//   limit    how far (in units of tau) a class may move from where LRU puts it; infinite by
//            default, since p_c saturates where rates would not. limit = 0 is plain LRU on the
//            caller's clock.
//
// Clock: the caller's (AccessHint::now, kept per entry as the time of its latest access).
// Accesses at the same instant as the previous one (a request's match, then its insert) are not
// counted as reuses. A caller without a clock (now always 0) sees every key equal: LRU by tree
// tick. A workload whose classes are reused alike gets about LRU on its clock: every shift is
// near 0.
//
// Adaptation to leaf-only, page-granular eviction: a key is computed from the owner's facts when
// the entry is linked or touched, with the estimates of that moment, and is not revised when the
// estimates move later (that would take a re-sort); an inner node that becomes a leaf is keyed by
// its own last access, which splits copy. Accesses to inner nodes count as reuses too (their
// pages were reused). Tail truncation does not re-key: the victim stays first until it is gone.
//
// State per entry: the time, tick and answer length of its latest access; its keys, score as
// above, then rank = the tick of the latest access; and the class of that access (segment), which
// counts its reuses once the next access comes (visited: it came after the entry reached the
// policy; an adopted past (AccessHistory) brings its time, tick and answer length, not a class).
// O(log n) per add, access and remove; victim() is O(1) plus an O(1) update of the estimates.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "eviction/ordered_policy.h"

namespace radixkv {

struct ReuseState {
  SetHook hook;
  uint64_t rank = 0;  // tick of the latest access
  double score = 0.0;
  double last_s = 0.0;         // time of the latest access (AccessHint::now)
  uint32_t output_tokens = 0;  // answer length of the latest access
  uint8_t segment = 0;         // class of the latest access, once visited
  bool visited = false;
};

class ReusePolicy final : public OrderedPolicy<ReuseState, ByScoreThenRank> {
 public:
  // Answer lengths 0, 1, 2-3, ..., 2^15..2^16-1, >= 2^16: 18 of them, each for a head and for a
  // continuation.
  static constexpr int kAnswerClasses = 18;
  static constexpr int kClasses = 2 * kAnswerClasses;
  static constexpr double kDefaultLimit = std::numeric_limits<double>::infinity();
  static constexpr double kDefaultPrior = 16.0;
  static constexpr double kVictimAgeWindow = 1024.0;  // pages, for the moving average of tau

  ReusePolicy() : ReusePolicy(kDefaultLimit, kDefaultPrior) {}
  // limit >= 0, infinity allowed (0: plain LRU on the caller's clock); prior > 0 and finite.
  // Throws std::invalid_argument otherwise.
  ReusePolicy(double limit, double prior);
  std::string_view name() const override { return "reuse"; }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override;
  AccessHistory history(const EvictionEntry& entry) const override;
  void add(EvictionEntry& entry) override;
  void on_access(EvictionEntry& entry, const AccessHint& hint) override;
  EvictionEntry* victim() override;

  // The class of an access: bit width of the answer length (output_tokens), plus kAnswerClasses
  // for a continuation (an entry with prefix_pages > 0).
  static uint8_t class_of(uint32_t output_tokens, uint32_t prefix_pages);
  // The entry's key: its latest access's time plus its class's shift when it was last keyed.
  double score(const EvictionEntry& entry) const { return state(entry).score; }
  // The current estimates: rate_c and rate_all in reuses per page-second (0 before any
  // exposure), tau in seconds (0 before the first victim), and p_c, the chance that a page of the
  // class is reused within tau (0 while rate_all or tau is 0).
  double rate(uint8_t cls) const;
  double overall_rate() const;
  double tau() const { return victim_age_; }
  double reuse_chance(uint8_t cls) const;

 private:
  static uint8_t class_of(const EvictionEntry& entry);
  double offset(uint8_t cls) const;
  void set_key(EvictionEntry& entry) const;
  void record(uint8_t cls, double reuses, double exposure);

  double limit_;
  double prior_;
  double now_ = 0.0;         // latest AccessHint::now seen
  double victim_age_ = 0.0;  // moving average of the age of evicted pages
  bool have_victim_ = false;
  std::array<double, kClasses> reuses_{};
  std::array<double, kClasses> exposure_{};
  double all_reuses_ = 0.0;
  double all_exposure_ = 0.0;
};

}  // namespace radixkv
