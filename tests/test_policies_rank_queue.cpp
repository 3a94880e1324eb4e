// LRU and FIFO keep their order in a queue of the entries linked in rank order plus an ordered set
// of the ones linked out of order (eviction/rank_queue_policy.h). Here both containers fill, equal
// ranks fall on both sides, and the naive reference model (tests/policy_models.h) names every
// victim; the look-ahead (next_victim_after) is checked against the victims that follow.
#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <random>
#include <vector>

#include "eviction/fifo_policy.h"
#include "eviction/lru_policy.h"
#include "tests/policy_models.h"
#include "tests/test_policies_owner.h"

using namespace radixkv;
using radixkv::testing::FifoModel;
using radixkv::testing::LruModel;
using radixkv::testing::ModelEntry;
using radixkv::testing::RoomyEntries;
using radixkv::testing::RoomyEntry;

namespace {

// One entry as the policy sees it and as its model does, with the same facts.
struct Twin {
  RoomyEntry room;
  EvictionEntry& real = room.entry;
  ModelEntry model;
};

AccessHint at_tick(uint64_t tick) {
  AccessHint hint;
  hint.tick = tick;
  return hint;
}

const QueueState& queue_state(const EvictionEntry& entry) { return state_of<QueueState>(entry); }

// How often each path of the policy decided a victim: the test fails if a run missed one.
struct Coverage {
  uint64_t from_queue = 0;       // the victim was at the front of the queue
  uint64_t from_late = 0;        // the victim had been linked out of order
  uint64_t ties_across = 0;      // another linked entry of the other container had the same rank
  uint64_t looked_ahead = 0;     // victims named by next_victim_after and then checked
  uint64_t batch_from_ring = 0;  // runs named in one call by a scan of the ring
};

// kKey: the fact the policy ranks by (LRU: last_access; FIFO: inserted_at).
template <typename Policy, typename Model, uint64_t ModelEntry::*kKey>
class Driver {
 public:
  explicit Driver(uint64_t seed) : rng_(seed) {}

  void run(int ops) {
    for (int op = 0; op < ops; ++op) {
      const int choice = static_cast<int>(rng_() % 100);
      if (twins_.size() < 8 || choice < 20) {
        create();
      } else if (choice < 40) {
        touch_path();
      } else if (choice < 65) {
        link_unlinked();
      } else if (choice < 75) {
        unlink_random();
      } else {
        evict_run();
      }
      REQUIRE(policy_.size() == model_.size());
      // The ring compacts rather than grows while half its slots are empty (rank_queue_policy.h).
      peak_queued_ = std::max(peak_queued_, policy_.size() - policy_.late_size());
      REQUIRE(policy_.ring_capacity() <= std::max<size_t>(16, 4 * peak_queued_));
    }
    while (policy_.size() > 0) evict_run();
    CHECK(model_.size() == 0);
  }
  const Coverage& coverage() const { return coverage_; }

 private:
  // New entries as the tree makes them: created at the clock, touched, then linked; sometimes
  // two or three with the same creation time (a split's upper node keeps its node's). Past 48
  // entries an unlinked one is reused as a new one (the old one erased).
  void create() {
    const uint64_t created = clock_;
    for (uint64_t k = rng_() % 3 == 0 ? 2 + rng_() % 2 : 1; k > 0; --k) {
      Twin* t = nullptr;
      if (twins_.size() < 48) {
        t = &twins_.emplace_back();
      } else {
        for (int tries = 0; t == nullptr && tries < 8; ++tries) {
          Twin& candidate = twins_[rng_() % twins_.size()];
          if (!candidate.model.linked) t = &candidate;
        }
        if (t == nullptr) return;
        t->model.hits = 0;
      }
      AccessHistory past;
      past.created = t->model.inserted_at = created;
      policy_.adopt(t->real, past);
      stamp(*t, ++clock_);
      policy_.add(t->real);
      model_.add(t->model);
    }
  }
  // One access along a path: up to 4 entries stamped with the same tick, linked or not.
  void touch_path() {
    const uint64_t tick = ++clock_;
    for (uint64_t k = 1 + rng_() % 4; k > 0; --k) {
      Twin& t = twins_[rng_() % twins_.size()];
      stamp(t, tick);
      model_.on_access(t.model, AccessHint{});
    }
  }
  // A leaf unpinned after its request, or a parent that became a leaf: its stamp may be old.
  // Half the time the one ranked last, which entries of the queue may tie with.
  void link_unlinked() {
    Twin* chosen = nullptr;
    if (rng_() % 2 == 0) {
      for (Twin& t : twins_) {
        if (!t.model.linked && (chosen == nullptr || t.model.*kKey >= chosen->model.*kKey)) {
          chosen = &t;
        }
      }
    }
    for (int tries = 0; chosen == nullptr && tries < 8; ++tries) {
      Twin& t = twins_[rng_() % twins_.size()];
      if (!t.model.linked) chosen = &t;
    }
    if (chosen == nullptr) return;
    // Sometimes a request touches a linked entry first, so that the queue's back ranks after it.
    if (rng_() % 2 == 0) {
      for (int tries = 0; tries < 8; ++tries) {
        Twin& t = twins_[rng_() % twins_.size()];
        if (!t.model.linked) continue;
        stamp(t, ++clock_);
        model_.on_access(t.model, AccessHint{});
        break;
      }
    }
    REQUIRE_FALSE(policy_.contains(chosen->real));
    policy_.add(chosen->real);
    model_.add(chosen->model);
  }
  void unlink_random() {
    for (int tries = 0; tries < 8; ++tries) {
      Twin& t = twins_[rng_() % twins_.size()];
      if (!t.model.linked) continue;
      REQUIRE(policy_.contains(t.real));
      policy_.remove(t.real);
      model_.remove(t.model);
      return;
    }
  }
  // Evicts up to 8 victims in turn, as evict_pages does, after naming them all ahead.
  void evict_run() {
    EvictionEntry* first = policy_.victim();
    if (first == nullptr) {
      REQUIRE(model_.victim() == nullptr);
      return;
    }
    std::vector<const EvictionEntry*> ahead = {first};
    const size_t want = std::min<size_t>(1 + rng_() % 8, policy_.size());
    // In one call (a scan of the ring while nothing is late), then entry by entry.
    std::vector<const EvictionEntry*> batch(want - 1);
    REQUIRE(policy_.next_victims_after(*first, batch) == want - 1);
    while (ahead.size() < want) {
      const EvictionEntry* next = policy_.next_victim_after(*ahead.back());
      REQUIRE(next != nullptr);  // every entry here is within the scan limit
      ahead.push_back(next);
    }
    REQUIRE(std::equal(batch.begin(), batch.end(), ahead.begin() + 1));
    coverage_.batch_from_ring += policy_.late_size() == 0 && want > 1 ? 1 : 0;
    for (const EvictionEntry* expected : ahead) {
      EvictionEntry* victim = policy_.victim();
      REQUIRE(victim == expected);
      ModelEntry* modelled = model_.victim();
      REQUIRE(modelled != nullptr);
      REQUIRE(victim == &twin_of(*modelled).real);
      count_decision(*victim);
      policy_.remove(*victim);
      model_.remove(*modelled);
    }
    coverage_.looked_ahead += ahead.size() - 1;
  }

  // One access: the model's facts, and the policy's news of it (linked or not, as the tree does).
  void stamp(Twin& t, uint64_t tick) {
    t.model.last_access = tick;
    ++t.model.hits;
    policy_.on_access(t.real, at_tick(tick));
  }
  Twin& twin_of(const ModelEntry& modelled) {
    const auto it = std::find_if(twins_.begin(), twins_.end(),
                                 [&](const Twin& t) { return &t.model == &modelled; });
    REQUIRE(it != twins_.end());
    return *it;
  }
  void count_decision(const EvictionEntry& victim) {
    const bool late = queue_state(victim).hook.is_linked();
    ++(late ? coverage_.from_late : coverage_.from_queue);
    for (const Twin& t : twins_) {
      if (&t.real != &victim && policy_.contains(t.real) &&
          queue_state(t.real).rank == queue_state(victim).rank &&
          queue_state(t.real).hook.is_linked() != late) {
        ++coverage_.ties_across;
        return;
      }
    }
  }

  std::mt19937_64 rng_;
  // Few (48), so that paths often share a tick with entries linked elsewhere.
  std::deque<Twin> twins_;  // declared first: outlives the policy that links its entries
  Policy policy_;
  Model model_;
  uint64_t clock_ = 0;
  size_t peak_queued_ = 0;
  Coverage coverage_;
};

template <typename Policy, typename Model, uint64_t ModelEntry::*kKey>
void agrees_with_model(uint64_t seed) {
  Driver<Policy, Model, kKey> driver(seed);
  driver.run(20000);
  const Coverage& c = driver.coverage();
  INFO("from queue ", c.from_queue, ", from late ", c.from_late, ", ties across ", c.ties_across,
       ", looked ahead ", c.looked_ahead, ", batches from the ring ", c.batch_from_ring);
  CHECK(c.from_queue > 500);
  CHECK(c.from_late > 500);
  CHECK(c.ties_across > 50);
  CHECK(c.looked_ahead > 1000);
  CHECK(c.batch_from_ring > 100);
}

// A new entry of `entries`, unlinked, whose past the policy knows: accessed last at `tick`.
EvictionEntry& stamped(RoomyEntries& entries, LruPolicy& policy, uint64_t tick) {
  EvictionEntry& entry = entries.emplace_back();
  AccessHistory past;
  past.last.tick = tick;
  policy.adopt(entry, past);
  return entry;
}

// Stamps `entry` with the next tick of `clock` and links it: in rank order, so into the ring.
void link_next(LruPolicy& policy, EvictionEntry& entry, uint64_t& clock) {
  policy.on_access(entry, at_tick(++clock));
  policy.add(entry);
}

}  // namespace

TEST_CASE("lru: entries linked out of order interleave with appended ones as the model says") {
  for (uint64_t seed : {1, 2, 3})
    agrees_with_model<LruPolicy, LruModel, &ModelEntry::last_access>(seed);
}

TEST_CASE("fifo: entries linked out of order interleave with appended ones as the model says") {
  for (uint64_t seed : {1, 2, 3})
    agrees_with_model<FifoPolicy, FifoModel, &ModelEntry::inserted_at>(seed);
}

TEST_CASE("lru: equal stamps across the queue and the late set leave in link order") {
  // Worked by hand: a, b, c share tick 1 (one path); b is unpinned later with that old stamp after
  // d (tick 2) was appended, so b goes to the late set and ties with a and c in the queue.
  RoomyEntries entries;  // declared first: outlive the policy that links them
  LruPolicy policy;
  EvictionEntry& a = stamped(entries, policy, 1);
  EvictionEntry& b = stamped(entries, policy, 1);
  EvictionEntry& c = stamped(entries, policy, 1);
  EvictionEntry& d = stamped(entries, policy, 2);
  policy.add(a);
  policy.add(c);
  policy.add(d);
  policy.add(b);
  CHECK(policy.late_size() == 1);
  // Order: a, c (queue, rank 1, linked first), b (late, rank 1), d (queue, rank 2).
  CHECK(policy.next_victim_after(a) == &c);
  CHECK(policy.next_victim_after(c) == &b);
  CHECK(policy.next_victim_after(b) == &d);
  CHECK(policy.next_victim_after(d) == nullptr);
  for (EvictionEntry* expected : {&a, &c, &b, &d}) {
    REQUIRE(policy.victim() == expected);
    policy.remove(*expected);
  }
  CHECK(policy.victim() == nullptr);
  // A rank equal to the late set's largest goes after it, into the late set too, even when the
  // queue's back no longer ranks after it.
  EvictionEntry& e = stamped(entries, policy, 5);
  EvictionEntry& f = stamped(entries, policy, 3);
  policy.add(e);  // queue
  policy.add(f);  // late: older than the queue's back
  policy.remove(e);
  EvictionEntry& g = stamped(entries, policy, 3);
  policy.add(g);  // the queue is empty, but g ties with f and came after it: late
  CHECK(policy.late_size() == 2);
  policy.add(e);  // queue again
  for (EvictionEntry* expected : {&f, &g, &e}) {
    REQUIRE(policy.victim() == expected);
    policy.remove(*expected);
  }
}

TEST_CASE("lru: a cold front under many touches: the ring compacts and the order holds") {
  // The cold entry never moves, so every touch of the others leaves an empty slot behind it in the
  // ring: without compaction the ring would grow by one slot per touch.
  constexpr int kHot = 8;
  RoomyEntries entries;  // declared first: outlive the policy that links them
  LruPolicy policy;
  EvictionEntry& cold = stamped(entries, policy, 0);
  std::vector<EvictionEntry*> hot;
  for (int i = 0; i < kHot; ++i) hot.push_back(&stamped(entries, policy, 0));
  std::vector<uint64_t> last_access(kHot);  // of each hot entry
  uint64_t clock = 0;
  link_next(policy, cold, clock);
  for (EvictionEntry* e : hot) link_next(policy, *e, clock);
  for (int i = 0; i < kHot; ++i) last_access[i] = i + 2;
  std::mt19937_64 rng(5);
  for (int touch = 0; touch < 100000; ++touch) {
    const size_t i = rng() % kHot;
    last_access[i] = ++clock;
    policy.on_access(*hot[i], at_tick(clock));
  }
  CHECK(policy.late_size() == 0);
  CHECK(policy.ring_capacity() <= 4 * (kHot + 1));
  // The naive order: the cold entry, then the others by their last touch.
  std::vector<size_t> by_access(kHot);
  for (size_t i = 0; i < kHot; ++i) by_access[i] = i;
  std::sort(by_access.begin(), by_access.end(),
            [&](size_t a, size_t b) { return last_access[a] < last_access[b]; });
  std::vector<const EvictionEntry*> expected = {&cold};
  for (size_t i : by_access) expected.push_back(hot[i]);
  REQUIRE(policy.victim() == expected[0]);
  for (size_t i = 0; i + 1 < expected.size(); ++i) {
    CHECK(policy.next_victim_after(*expected[i]) == expected[i + 1]);
  }
  CHECK(policy.next_victim_after(*expected.back()) == nullptr);
  for (const EvictionEntry* want : expected) {
    EvictionEntry* got = policy.victim();
    REQUIRE(got == want);
    policy.remove(*got);
    CHECK_FALSE(policy.contains(*got));
  }
  CHECK(policy.victim() == nullptr);
  CHECK(policy.size() == 0);
}

TEST_CASE("lru: past a long run of empty slots the look-ahead names the next victim or nobody") {
  // a, 300 entries, z, y appended; l (older than y) goes late; y and the 300 leave. The order is
  // a, z, l, but from a the queue's next entry lies past more empty slots than the policy skips:
  // it may say nullptr (cannot tell cheaply), never l.
  constexpr int kGap = 300;
  RoomyEntries entries;  // declared first: outlive the policy that links them
  LruPolicy policy;
  EvictionEntry& a = stamped(entries, policy, 0);
  EvictionEntry& z = stamped(entries, policy, 0);
  EvictionEntry& y = stamped(entries, policy, 0);
  std::vector<EvictionEntry*> gap;
  for (int i = 0; i < kGap; ++i) gap.push_back(&stamped(entries, policy, 0));
  uint64_t clock = 0;
  link_next(policy, a, clock);
  for (EvictionEntry* e : gap) link_next(policy, *e, clock);
  link_next(policy, z, clock);
  EvictionEntry& l = stamped(entries, policy, ++clock);
  link_next(policy, y, clock);
  policy.add(l);
  REQUIRE(policy.late_size() == 1);
  policy.remove(y);
  for (EvictionEntry* e : gap) policy.remove(*e);
  REQUIRE(policy.victim() == &a);
  const EvictionEntry* next = policy.next_victim_after(a);
  CHECK((next == nullptr || next == &z));
  CHECK(policy.next_victim_after(z) == &l);
  CHECK(policy.next_victim_after(l) == nullptr);
  for (EvictionEntry* expected : {&a, &z, &l}) {
    REQUIRE(policy.victim() == expected);
    policy.remove(*expected);
  }
}
