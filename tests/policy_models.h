// Reference models of every eviction policy: what each policy's header says it does, written as
// naively as possible (a plain vector of linked entries, a linear scan for the victim), sharing no
// code with eviction/. TreeModel (tests/tree_model.h) feeds them the same facts the radix tree
// feeds the real policies, so the drivers can predict every victim exactly and compare.
//
// Order among equal keys: the real policies keep linked entries in a multiset, where an entry
// that is (re-)linked goes after every entry with an equal key. The models reproduce it with an
// arrival number taken at every (re-)link: each model's order is (its key, arrival).
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "eviction/eviction_entry.h"

namespace radixkv::testing {

// One evictable unit as a policy sees it: the facts its owner keeps, and the model's own state.
struct ModelEntry {
  // Facts, kept by TreeModel the way the tree keeps EvictionEntry's.
  uint64_t last_access = 0;
  uint64_t inserted_at = 0;
  uint64_t hits = 0;
  uint32_t pages = 0;
  uint32_t prefix_pages = 0;
  int32_t priority = kDefaultPriority;
  uint32_t output_tokens = 0;  // of the latest access
  double last_access_s = 0.0;  // AccessHint::now of the latest access
  // The model's state.
  bool linked = false;
  uint64_t arrival = 0;  // taken at every (re-)link: the last tie-break
  uint64_t rank = 0;
  double score = 0.0;
  int segment = 0;
  bool visited = false;
  double stamp = 0.0;
};

class PolicyModel {
 public:
  virtual ~PolicyModel() = default;
  // The tree's calls (eviction/eviction_policy.h): e became evictable / stops being evictable /
  // lies on an accessed path (facts already updated) / which entry loses its next page.
  virtual void add(ModelEntry& e) = 0;
  void remove(ModelEntry& e) {
    const auto it = std::find(linked_.begin(), linked_.end(), &e);
    if (it == linked_.end()) throw std::logic_error("policy model: removing an unlinked entry");
    linked_.erase(it);
    e.linked = false;
  }
  virtual void on_access(ModelEntry& e, const AccessHint& hint) = 0;
  virtual ModelEntry* victim() = 0;
  size_t size() const { return linked_.size(); }

  // The rule this policy has beyond plain recency or age, as a phrase ("" when none), and how
  // often a run reached it: the property test checks that every rule was exercised.
  virtual std::string_view rule() const { return ""; }
  uint64_t rule_events() const { return rule_events_; }

 protected:
  void link(ModelEntry& e) {
    if (!e.linked) linked_.push_back(&e);
    e.linked = true;
    e.arrival = ++arrivals_;
  }
  // The linked entry with the smallest (key(e), arrival), or nullptr. `among` filters.
  template <typename Key, typename Among>
  ModelEntry* lowest(Key key, Among among) const {
    ModelEntry* best = nullptr;
    for (ModelEntry* e : linked_) {
      if (!among(*e)) continue;
      if (best == nullptr ||
          std::tuple(key(*e), e->arrival) < std::tuple(key(*best), best->arrival)) {
        best = e;
      }
    }
    return best;
  }
  template <typename Key>
  ModelEntry* lowest(Key key) const {
    return lowest(key, [](const ModelEntry&) { return true; });
  }

  std::vector<ModelEntry*> linked_;
  uint64_t arrivals_ = 0;
  uint64_t rule_events_ = 0;
};

// lru: least recent access first.
class LruModel final : public PolicyModel {
 public:
  void add(ModelEntry& e) override {
    e.rank = e.last_access;
    link(e);
  }
  void on_access(ModelEntry& e, const AccessHint&) override {
    if (e.linked) add(e);
  }
  ModelEntry* victim() override {
    return lowest([](const ModelEntry& e) { return e.rank; });
  }
};

// fifo: oldest creation first; an access changes nothing.
class FifoModel final : public PolicyModel {
 public:
  void add(ModelEntry& e) override {
    e.rank = e.inserted_at;
    link(e);
  }
  void on_access(ModelEntry&, const AccessHint&) override {}
  ModelEntry* victim() override {
    return lowest([](const ModelEntry& e) { return e.rank; });
  }
};

// mru: newest access first; filo: newest creation first (an access changes nothing). Among equal
// ranks the one linked first.
class MruModel final : public PolicyModel {
 public:
  void add(ModelEntry& e) override {
    e.rank = e.last_access;
    link(e);
  }
  void on_access(ModelEntry& e, const AccessHint&) override {
    if (e.linked) add(e);
  }
  ModelEntry* victim() override {
    return lowest([](const ModelEntry& e) { return -static_cast<int64_t>(e.rank); });
  }
};

class FiloModel final : public PolicyModel {
 public:
  void add(ModelEntry& e) override {
    e.rank = e.inserted_at;
    link(e);
  }
  void on_access(ModelEntry&, const AccessHint&) override {}
  ModelEntry* victim() override {
    return lowest([](const ModelEntry& e) { return -static_cast<int64_t>(e.rank); });
  }
};

// lfu: fewest hits first, least recent access among equal hits; both as of the last (re-)link.
class LfuModel final : public PolicyModel {
 public:
  void add(ModelEntry& e) override {
    e.score = static_cast<double>(e.hits);
    e.rank = e.last_access;
    link(e);
  }
  void on_access(ModelEntry& e, const AccessHint&) override {
    if (e.linked) add(e);
  }
  ModelEntry* victim() override {
    ModelEntry* v = lowest([](const ModelEntry& e) { return std::tuple(e.score, e.rank); });
    if (v == nullptr) return nullptr;
    // Counts the victims that recency chose over an older creation with the same hits.
    for (const ModelEntry* e : linked_) {
      if (e->score == v->score && e->inserted_at < v->inserted_at) {
        ++rule_events_;
        break;
      }
    }
    return v;
  }
  std::string_view rule() const override {
    return "equal hits decided by recency against creation order";
  }
};

// gdsf: lowest H = L + hits * cost_per_page as of the last (re-)link; L rises to each victim's H.
class GdsfModel final : public PolicyModel {
 public:
  explicit GdsfModel(double depth_pages) : depth_pages_(depth_pages) {}
  void add(ModelEntry& e) override {
    // A page at depth d costs 1 + d / depth_pages; a node's pages are priced at their middle.
    const double middle = static_cast<double>(e.prefix_pages) + e.pages / 2.0;
    e.score = inflation_ + static_cast<double>(e.hits) * (1.0 + middle / depth_pages_);
    e.rank = e.last_access;
    link(e);
  }
  void on_access(ModelEntry& e, const AccessHint&) override {
    if (e.linked) add(e);
  }
  ModelEntry* victim() override {
    ModelEntry* v = lowest([](const ModelEntry& e) { return std::tuple(e.score, e.rank); });
    if (v != nullptr && v->score > inflation_) {
      inflation_ = v->score;
      ++rule_events_;
    }
    return v;
  }
  std::string_view rule() const override { return "the inflation L rose"; }

 private:
  double depth_pages_;
  double inflation_ = 0.0;
};

// priority: lowest effective priority first, least recent within one. The effective priority is
// the latest access's (clamped to 0..100) until `retention` seconds after that access on the
// caller's clock (the latest AccessHint::now seen), then 35. It is fixed when the entry is
// (re-)linked; before every victim, each linked entry whose priority has run out falls to 35.
class PriorityModel final : public PolicyModel {
 public:
  explicit PriorityModel(double retention) : retention_(retention) {}
  void add(ModelEntry& e) override {
    e.segment = e.score + retention_ <= now_ ? kDefaultPriority
                                             : std::clamp(e.priority, kMinPriority, kMaxPriority);
    e.rank = e.last_access;
    link(e);
  }
  void on_access(ModelEntry& e, const AccessHint& hint) override {
    now_ = std::max(now_, hint.now);
    e.score = now_;  // the time of the access
    if (e.linked) add(e);
  }
  ModelEntry* victim() override {
    std::vector<ModelEntry*> expired;
    for (ModelEntry* e : linked_) {
      if (e->segment != kDefaultPriority && e->score + retention_ <= now_) expired.push_back(e);
    }
    // Re-linked lowest priority first, oldest first, as the policy demotes them.
    std::sort(expired.begin(), expired.end(), [](const ModelEntry* a, const ModelEntry* b) {
      return std::tuple(a->segment, a->rank, a->arrival) <
             std::tuple(b->segment, b->rank, b->arrival);
    });
    for (ModelEntry* e : expired) {
      e->segment = kDefaultPriority;
      link(*e);
    }
    ModelEntry* v = lowest([](const ModelEntry& e) { return std::tuple(e.segment, e.rank); });
    if (v == nullptr) return nullptr;
    if (retention_ == std::numeric_limits<double>::infinity()) {
      // Counts the victims that a lower priority chose over an older entry.
      for (const ModelEntry* e : linked_) {
        if (e->rank < v->rank) {
          ++rule_events_;
          break;
        }
      }
    } else {
      rule_events_ += expired.size();
    }
    return v;
  }
  std::string_view rule() const override {
    return retention_ == std::numeric_limits<double>::infinity()
               ? "a lower priority evicted before an older entry"
               : "priorities ran out";
  }

 private:
  double retention_;
  double now_ = 0.0;
};

// slru: probation (segment 0) before protected (1), least recent first in each. A second hit
// (hits >= 2) promotes, linked or not. Before every victim, while protected holds more than
// floor(fraction * linked entries), its least recent entry moves to probation's most recent end:
// the newest tick seen in any add or access.
class SlruModel final : public PolicyModel {
 public:
  explicit SlruModel(double protected_fraction) : fraction_(protected_fraction) {}
  void add(ModelEntry& e) override {
    newest_ = std::max(newest_, e.last_access);
    e.rank = e.last_access;
    link(e);
  }
  void on_access(ModelEntry& e, const AccessHint&) override {
    newest_ = std::max(newest_, e.last_access);
    if (e.hits >= 2) e.segment = 1;
    if (e.linked) add(e);
  }
  ModelEntry* victim() override {
    const auto in_protected = [](const ModelEntry& e) { return e.segment == 1; };
    const auto limit = static_cast<size_t>(fraction_ * static_cast<double>(linked_.size()));
    while (static_cast<size_t>(std::count_if(linked_.begin(), linked_.end(),
                                             [&](auto* e) { return in_protected(*e); })) > limit) {
      ModelEntry* oldest = lowest([](const ModelEntry& e) { return e.rank; }, in_protected);
      oldest->segment = 0;
      oldest->rank = newest_;
      link(*oldest);
      ++rule_events_;
    }
    return lowest([](const ModelEntry& e) { return std::tuple(e.segment, e.rank); });
  }
  std::string_view rule() const override { return "protected entries demoted"; }

 private:
  double fraction_;
  uint64_t newest_ = 0;
};

// sieve: entries in creation order; an access after creation (hits >= 2) sets a visited bit,
// linked or not. The hand (a creation time) resumes at the first linked entry at or after it,
// wrapping to the oldest; it clears visited bits as it passes and stops at the first unvisited.
class SieveModel final : public PolicyModel {
 public:
  void add(ModelEntry& e) override {
    e.rank = e.inserted_at;
    link(e);
  }
  void on_access(ModelEntry& e, const AccessHint&) override {
    if (e.hits >= 2) e.visited = true;
  }
  ModelEntry* victim() override {
    if (linked_.empty()) return nullptr;
    std::vector<ModelEntry*> queue = linked_;
    std::sort(queue.begin(), queue.end(), [](const ModelEntry* a, const ModelEntry* b) {
      return std::tuple(a->rank, a->arrival) < std::tuple(b->rank, b->arrival);
    });
    size_t i = 0;
    while (i < queue.size() && queue[i]->rank < hand_) ++i;
    if (i == queue.size()) i = 0;
    while (queue[i]->visited) {
      queue[i]->visited = false;
      ++rule_events_;
      i = (i + 1) % queue.size();
    }
    hand_ = queue[i]->rank;
    return queue[i];
  }
  std::string_view rule() const override { return "visited bits cleared by the hand"; }

 private:
  uint64_t hand_ = 0;
};

// reuse: lowest (score, rank) first, both as of the last (re-)link: rank = last access, score =
// last_access_s + tau * clamp(ln(p_c / p_all), -limit, limit) with the estimates of that moment,
// where p = 1 - exp(-rate * tau) (computed as -expm1(-rate * tau)) for the class's rate and for
// the rate over every class. The class c of an entry: the bit width of its answer length (capped
// at 17), plus 18 below the root's children. An access at a later time than the entry's previous
// one adds `pages` reuses and pages * (time between) of exposure to the class of that previous
// access; each victim adds (latest now - its last_access_s) of exposure to its class and moves
// tau, the victims' age: the first sets it, each later one moves it 1/1024 of the way. rate_c =
// (reuses_c + 16) / (exposure_c + 16 / rate_all), rate_all = all reuses / all exposure; no shift
// while rate_all or tau is 0.
class ReuseModel final : public PolicyModel {
 public:
  explicit ReuseModel(double limit) : limit_(limit) {}
  void add(ModelEntry& e) override {
    e.score = e.last_access_s + shift(class_of(e));
    e.rank = e.last_access;
    link(e);
  }
  void on_access(ModelEntry& e, const AccessHint& hint) override {
    now_ = std::max(now_, hint.now);
    if (e.visited && e.last_access_s > e.stamp) {
      const double pages = e.pages;
      count(e.segment, pages, pages * (e.last_access_s - e.stamp));
    }
    e.visited = true;
    e.segment = class_of(e);
    e.stamp = e.last_access_s;
    if (e.linked) add(e);
  }
  ModelEntry* victim() override {
    ModelEntry* v = lowest([](const ModelEntry& e) { return std::tuple(e.score, e.rank); });
    if (v == nullptr) return nullptr;
    const double age = std::max(0.0, now_ - v->last_access_s);
    count(class_of(*v), 0.0, age);
    tau_ = victims_++ == 0 ? age : tau_ + (age - tau_) / 1024.0;
    // Counts the victims that a class shift chose over an entry accessed earlier.
    for (const ModelEntry* e : linked_) {
      if (e->rank < v->rank) {
        ++rule_events_;
        break;
      }
    }
    return v;
  }
  std::string_view rule() const override { return "a class shift evicted a newer entry first"; }

 private:
  static int class_of(const ModelEntry& e) {
    int bits = 0;
    for (uint32_t x = e.output_tokens; x != 0; x >>= 1) ++bits;
    return std::min(bits, 17) + (e.prefix_pages == 0 ? 0 : 18);
  }
  void count(int cls, double reuses, double exposure) {
    reuses_[cls] += reuses;
    exposure_[cls] += exposure;
    all_reuses_ += reuses;
    all_exposure_ += exposure;
  }
  double shift(int cls) {
    const double all = all_exposure_ > 0.0 ? all_reuses_ / all_exposure_ : 0.0;
    if (all <= 0.0 || tau_ <= 0.0) return 0.0;
    const double rate = (reuses_[cls] + 16.0) / (exposure_[cls] + 16.0 / all);
    const double p_class = -std::expm1(-rate * tau_);
    const double p_all = -std::expm1(-all * tau_);
    return tau_ * std::clamp(std::log(p_class / p_all), -limit_, limit_);
  }

  double limit_;
  double now_ = 0.0;
  double tau_ = 0.0;
  uint64_t victims_ = 0;
  std::map<int, double> reuses_, exposure_;
  double all_reuses_ = 0.0;
  double all_exposure_ = 0.0;
};

// The model for a policy spec as make_policy() takes it ("NAME" or "NAME:key=value", with the
// same defaults). Throws std::invalid_argument for a policy that has no model yet: every policy
// needs one before the drivers can run it.
inline std::unique_ptr<PolicyModel> make_policy_model(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  // At most one parameter; returns `fallback` when the spec has none.
  const auto parameter = [&](std::string_view key, double fallback) {
    if (colon == std::string_view::npos) return fallback;
    const std::string_view item = spec.substr(colon + 1);
    const std::string prefix = std::string(key) + "=";
    if (item.substr(0, prefix.size()) != prefix) {
      throw std::invalid_argument("policy model: '" + std::string(spec) + "' is not " +
                                  std::string(name) + ":" + prefix + "VALUE");
    }
    const std::string_view text = item.substr(prefix.size());
    if (text == "inf") return std::numeric_limits<double>::infinity();
    double value = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size()) {
      throw std::invalid_argument("policy model: bad number in '" + std::string(spec) + "'");
    }
    return value;
  };
  const double forever = std::numeric_limits<double>::infinity();
  if (name == "lru") return std::make_unique<LruModel>();
  if (name == "fifo") return std::make_unique<FifoModel>();
  if (name == "lfu") return std::make_unique<LfuModel>();
  if (name == "mru") return std::make_unique<MruModel>();
  if (name == "filo") return std::make_unique<FiloModel>();
  if (name == "sieve") return std::make_unique<SieveModel>();
  if (name == "gdsf") return std::make_unique<GdsfModel>(parameter("depth_pages", 1024.0));
  if (name == "priority") return std::make_unique<PriorityModel>(parameter("retention", forever));
  if (name == "slru") return std::make_unique<SlruModel>(parameter("protected", 0.8));
  if (name == "reuse") return std::make_unique<ReuseModel>(parameter("limit", forever));
  throw std::invalid_argument("policy model: no reference model for policy '" + std::string(spec) +
                              "' (tests/policy_models.h): write one before testing the policy");
}

}  // namespace radixkv::testing
