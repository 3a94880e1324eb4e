// The retention layer (eviction/retention_layer.h) around LRU against a naive model of its header,
// victim by victim, over random operations (accesses, pins, hints, holds, releases, the clock
// running past deadlines with or without an access, the share bound spilling protected entries
// into LRU's order); and its hand-worked cases.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "eviction/lru_policy.h"
#include "eviction/retention_layer.h"

namespace radixkv {
namespace {

// An entry with room for the layer's state and LRU's in front of it.
struct Block {
  static constexpr std::size_t kRoom = 192;
  alignas(8) std::byte room[kRoom];
  EvictionEntry entry;
};

// Stands in for the tree: makes entries, touches them with one tick per access, takes pages from
// victims.
struct Owner {
  explicit Owner(RetentionConfig config = {})
      : layer(std::make_unique<RetentionLayer>(std::make_unique<LruPolicy>(), config)) {
    REQUIRE(layer->state_bytes() <= Block::kRoom);
  }
  EvictionEntry& make(uint32_t pages) {
    EvictionEntry& e = blocks.emplace_back().entry;
    e.pages = pages;
    AccessHistory past;
    past.created = clock;
    layer->adopt(e, past);
    touch(e);
    return e;
  }
  void touch(EvictionEntry& e) {
    AccessHint hint;
    hint.now = now;
    hint.tick = ++clock;
    layer->on_access(e, hint);
  }
  std::deque<Block> blocks;  // first: outlives the layer
  std::unique_ptr<RetentionLayer> layer;
  uint64_t clock = 0;
  double now = 0.0;
};

// The header's rules, computed from scratch at every victim.
struct Model {
  struct Entry {
    uint32_t pages = 0;
    bool linked = false;
    bool dead = false;
    uint64_t tick = 0;
    int hint_priority = kDefaultPriority;
    double hint_until = 0.0;
    uint64_t session = 0;
    uint64_t stamp = 0;
    bool spilled = false;  // by the share, at spilled_at: in LRU's order while its standing is that
    std::pair<int, double> spilled_at;
  };
  struct Session {
    uint64_t stamp = 0;
    double hold_until = 0.0;
  };
  RetentionConfig config;
  std::vector<Entry> entries;
  std::map<uint64_t, Session> sessions;
  double now = 0.0;
  uint64_t stamps = 0;  // every retain naming a session takes the next

  void retain(std::size_t i, const Retention& r) {
    now = std::max(now, r.now);
    Entry& e = entries[i];
    if (r.priority != kDefaultPriority) {
      if (e.hint_priority != kDefaultPriority && e.hint_until > now) {
        e.hint_priority = std::max(e.hint_priority, r.priority);
        e.hint_until = std::max(e.hint_until, r.until);
      } else {
        e.hint_priority = r.priority;
        e.hint_until = r.until;
      }
    }
    if (r.session != 0) {
      Session& s = sessions[r.session];
      s.stamp = ++stamps;
      e.session = r.session;
      e.stamp = s.stamp;
    }
  }
  void hold(uint64_t session, double until) {
    const auto it = sessions.find(session);
    if (it != sessions.end()) it->second.hold_until = until;
  }
  void release(uint64_t session) { sessions.erase(session); }

  // (priority, deadline) of the standing; priority 35: none.
  std::pair<int, double> standing(const Entry& e) const {
    int p = kDefaultPriority;
    double deadline = std::numeric_limits<double>::infinity();
    bool any = false;
    if (e.hint_priority != kDefaultPriority && e.hint_until > now) {
      p = e.hint_priority;
      deadline = e.hint_until;
      any = true;
    }
    const auto it = sessions.find(e.session);
    if (e.session != 0 && it != sessions.end() && it->second.stamp == e.stamp &&
        it->second.hold_until > now) {
      p = any ? std::max(p, config.hold_priority) : config.hold_priority;
      deadline = std::min(deadline, it->second.hold_until);
    }
    return {p, deadline};
  }

  // The order among entries with a standing: lowest priority, then the latest deadline.
  static bool before(std::pair<int, double> a, std::pair<int, double> b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  }

  // Spilled: protected, but ranked as plain, since the share spilled it at the standing it has.
  bool spilled(const Entry& e) const {
    const auto st = standing(e);
    return e.spilled && st.first > kDefaultPriority && st == e.spilled_at;
  }

  // Index of the victim, or -1; spills what the share cannot afford first.
  int victim() {
    int demoted = -1, plain = -1;
    std::pair<int, double> best_demoted;
    uint64_t protected_pages = 0, linked_pages = 0;
    const auto first_protected = [&] {
      int protect = -1;
      std::pair<int, double> best;
      for (std::size_t i = 0; i < entries.size(); ++i) {
        const Entry& e = entries[i];
        const auto st = standing(e);
        if (!e.linked || st.first <= kDefaultPriority || spilled(e)) continue;
        if (protect < 0 || before(st, best)) protect = static_cast<int>(i), best = st;
      }
      return protect;
    };
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      if (!e.linked) continue;
      linked_pages += e.pages;
      const auto st = standing(e);
      if (st.first < kDefaultPriority) {
        if (demoted < 0 || before(st, best_demoted))
          demoted = static_cast<int>(i), best_demoted = st;
      } else if (st.first > kDefaultPriority && !spilled(e)) {
        protected_pages += e.pages;
      }
    }
    if (demoted >= 0) return demoted;
    while (static_cast<double>(protected_pages) >
           config.hold_share * static_cast<double>(linked_pages)) {
      Entry& e = entries[first_protected()];
      e.spilled = true;
      e.spilled_at = standing(e);
      protected_pages -= e.pages;
      ++spills;
    }
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      if (!e.linked || (standing(e).first != kDefaultPriority && !spilled(e))) continue;
      if (plain < 0 || e.tick < entries[plain].tick) plain = static_cast<int>(i);
    }
    return plain >= 0 ? plain : first_protected();
  }
  uint64_t spills = 0;
};

// Random operations on both; every victim compared. Returns how many were protected; adds the
// entries the share spilled to `spills`.
uint64_t run_random(uint32_t seed, const RetentionConfig& config, uint64_t& spills) {
  std::mt19937 rng(seed);
  Owner owner(config);
  Model model;
  model.config = config;
  std::vector<EvictionEntry*> handle;
  const auto pick = [&](auto&& ok) -> int {
    std::vector<int> candidates;
    for (std::size_t i = 0; i < model.entries.size(); ++i) {
      if (ok(model.entries[i])) candidates.push_back(static_cast<int>(i));
    }
    if (candidates.empty()) return -1;
    return candidates[rng() % candidates.size()];
  };
  // A deadline no other draws: ties would need the layer's placement order.
  const auto later = [&] {
    return model.now + std::uniform_real_distribution<double>(0.01, 20.0)(rng);
  };
  uint64_t victims = 0, protected_victims = 0;
  for (int step = 0; step < 4000; ++step) {
    const unsigned op = rng() % 100;
    if (op < 15 || model.entries.size() < 3) {
      const uint32_t pages = 1 + rng() % 4;
      handle.push_back(&owner.make(pages));
      Model::Entry e;
      e.pages = pages;
      e.tick = owner.clock;
      model.entries.push_back(e);
      owner.layer->add(*handle.back());
      model.entries.back().linked = true;
    } else if (op < 30) {  // an access, the clock moving on
      const int i = pick([](const Model::Entry& e) { return !e.dead; });
      if (i < 0) continue;
      owner.now += std::uniform_real_distribution<double>(0.0, 1.5)(rng);
      owner.touch(*handle[i]);
      model.now = std::max(model.now, owner.now);
      model.entries[i].tick = owner.clock;
    } else if (op < 34) {  // the clock moving on with no access (the runtime's set_now)
      owner.now += std::uniform_real_distribution<double>(0.0, 1.5)(rng);
      owner.layer->set_now(owner.now);
      model.now = std::max(model.now, owner.now);
    } else if (op < 41) {  // pin or unpin
      const int i = pick([](const Model::Entry& e) { return !e.dead; });
      if (i < 0) continue;
      Model::Entry& e = model.entries[i];
      if (e.linked) {
        owner.layer->remove(*handle[i]);
      } else {
        owner.layer->add(*handle[i]);
      }
      e.linked = !e.linked;
    } else if (op < 55) {  // a hint, maybe naming a session
      const int i = pick([](const Model::Entry& e) { return !e.dead; });
      if (i < 0) continue;
      Retention r;
      r.priority = (rng() % 3 == 0) ? kDefaultPriority : static_cast<int32_t>(rng() % 101);
      r.until = later();
      r.session = (rng() % 2 == 0) ? 1 + rng() % 4 : 0;
      r.now = model.now;
      owner.layer->retain(*handle[i], r);
      model.retain(i, r);
    } else if (op < 63) {
      const uint64_t session = 1 + rng() % 5;
      const double until = later();
      owner.layer->hold(session, until);
      model.hold(session, until);
    } else if (op < 67) {
      const uint64_t session = 1 + rng() % 5;
      owner.layer->release(session);
      model.release(session);
    } else {  // evict a page, as the tree does
      const int want = model.victim();
      EvictionEntry* got = owner.layer->victim();
      REQUIRE(got == (want < 0 ? nullptr : handle[want]));
      // Right after victim() the layer has re-ranked every lapsed standing, as the model reads it.
      std::size_t spilled = 0;
      for (const Model::Entry& e : model.entries) spilled += e.linked && model.spilled(e) ? 1 : 0;
      REQUIRE(owner.layer->spilled_entries() == spilled);
      if (want < 0) continue;
      ++victims;
      if (model.standing(model.entries[want]).first > kDefaultPriority) ++protected_victims;
      Model::Entry& e = model.entries[want];
      --got->pages;
      --e.pages;
      if (e.pages == 0) {
        owner.layer->remove(*got);
        e.linked = false;
        e.dead = true;
        // The owner frees it: scribble over its state so that a pointer kept to it shows.
        std::memset(reinterpret_cast<std::byte*>(got) - owner.layer->state_bytes(), 0xA5,
                    owner.layer->state_bytes());
      }
    }
    std::size_t linked = 0;
    for (const Model::Entry& e : model.entries) linked += e.linked ? 1 : 0;
    REQUIRE(owner.layer->size() == linked);
    // The layer re-ranks a linked entry whenever its standing changes (an unlinked one when it is
    // linked again): one whose standing is no longer the one it spilled with is no longer spilled.
    for (Model::Entry& e : model.entries) {
      if (e.linked && e.spilled && model.standing(e) != e.spilled_at) e.spilled = false;
    }
  }
  CHECK(victims > 300);
  spills += model.spills;
  return protected_victims;
}

TEST_CASE("retention layer: every victim as the model names it, over random operations") {
  uint64_t protected_victims = 0;  // the share bound and an empty inner policy both came up
  uint64_t spills = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    CAPTURE(seed);
    protected_victims += run_random(seed, {}, spills);
    protected_victims += run_random(seed + 100, {.hold_share = 0.2, .hold_priority = 60}, spills);
    protected_victims +=
        run_random(seed + 200, {.hold_share = 1.0, .hold_priority = kMaxPriority}, spills);
  }
  CHECK(protected_victims > 100);
  CHECK(spills > 100);
}

TEST_CASE("retention layer: order of victims by hand") {
  Owner o;  // share 0.5, holds at 100
  EvictionEntry& a = o.make(1);
  EvictionEntry& b = o.make(1);
  EvictionEntry& c = o.make(1);
  EvictionEntry& d = o.make(1);
  for (EvictionEntry* e : {&a, &b, &c, &d}) o.layer->add(*e);
  // LRU alone would take a, b, c, d.
  o.layer->retain(a, {.priority = 80, .until = 10.0});
  o.layer->retain(d, {.priority = 10, .until = 5.0});
  CHECK(o.layer->protected_entries() == 1);
  CHECK(o.layer->demoted_entries() == 1);
  CHECK(o.layer->victim() == &d);  // demoted first, although the newest
  o.layer->remove(d);
  CHECK(o.layer->victim() == &b);  // a is protected
  // The clock passes a's deadline: it falls back to LRU, where it is the oldest.
  o.now = 10.0;
  o.touch(c);
  CHECK(o.layer->victim() == &a);
}

TEST_CASE("retention layer: protected pages over the share spill into LRU's order") {
  Owner o({.hold_share = 0.5});
  EvictionEntry& c = o.make(1);  // LRU: c, a, b
  EvictionEntry& a = o.make(2);
  EvictionEntry& b = o.make(2);
  for (EvictionEntry* e : {&a, &b, &c}) o.layer->add(*e);
  o.layer->retain(a, {.priority = 90, .until = 100.0});
  o.layer->retain(b, {.priority = 70, .until = 100.0});
  // 4 of 5 pages protected, over half: b (70, below a's 90) spills back into LRU's order, where c
  // is older, so c goes first, as it would without hints.
  CHECK(o.layer->victim() == &c);
  CHECK(o.layer->spilled_entries() == 1);
  CHECK(o.layer->protected_entries() == 1);
  o.layer->remove(c);
  // 2 of 4 pages protected: within half; b is LRU's only entry.
  CHECK(o.layer->victim() == &b);
  --b.pages;
  // 2 of 3: over; a spills too, and is older than b.
  CHECK(o.layer->victim() == &a);
  CHECK(o.layer->spilled_entries() == 2);
  // Pinned and unpinned with the same standing: still spilled.
  o.layer->remove(a);
  o.layer->add(a);
  CHECK(o.layer->spilled_entries() == 2);
  CHECK(o.layer->protected_entries() == 0);
  // A new deadline is a new standing: a is protected again.
  o.layer->retain(a, {.priority = 90, .until = 200.0});
  CHECK(o.layer->spilled_entries() == 1);
  CHECK(o.layer->protected_entries() == 1);
  // Past b's deadline it is plain again; a, 2 of 3 pages, spills at the next victim().
  o.layer->set_now(150.0);
  CHECK(o.layer->victim() == &a);
  CHECK(o.layer->spilled_entries() == 1);
  CHECK(o.layer->protected_entries() == 0);
}

TEST_CASE("retention layer: the clock moves with set_now, before any access") {
  Owner o;
  EvictionEntry& a = o.make(1);
  EvictionEntry& b = o.make(1);
  for (EvictionEntry* e : {&a, &b}) o.layer->add(*e);
  o.layer->retain(a, {.priority = 80, .until = 5.0});
  CHECK(o.layer->victim() == &b);
  o.layer->set_now(4.9);
  CHECK(o.layer->victim() == &b);
  o.layer->set_now(5.0);  // a lapses at its deadline
  CHECK(o.layer->victim() == &a);
  o.layer->set_now(1.0);  // the clock never goes back
  o.layer->retain(a, {.priority = 80, .until = 3.0});
  CHECK(o.layer->victim() == &a);
}

TEST_CASE("retention layer: a session hold follows its latest entry and ends at release") {
  Owner o;
  EvictionEntry& first = o.make(1);
  EvictionEntry& second = o.make(1);
  EvictionEntry& other = o.make(1);
  for (EvictionEntry* e : {&first, &second, &other}) o.layer->add(*e);
  o.layer->hold(7, 50.0);  // a session never named: ignored
  CHECK(o.layer->protected_entries() == 0);
  o.layer->retain(first, {.session = 7});
  o.layer->hold(7, 50.0);
  CHECK(o.layer->victim() == &second);
  // The session's next path ends at `second`: the hold moves there.
  o.layer->retain(second, {.session = 7});
  CHECK(o.layer->victim() == &first);
  // Pinned while held (its next request), unpinned later: still held.
  o.layer->remove(second);
  o.layer->add(second);
  CHECK(o.layer->victim() == &first);
  o.layer->remove(first);
  CHECK(o.layer->victim() == &other);
  o.layer->release(7);
  CHECK(o.layer->victim() == &second);  // plain again, older than `other`
}

TEST_CASE("retention layer: a bad configuration or no inner policy is refused") {
  CHECK_THROWS_WITH_AS(RetentionLayer(nullptr), "retention layer: no inner policy",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(RetentionLayer(std::make_unique<LruPolicy>(), {.hold_share = 0.0}),
                       "retention layer: hold share 0 must lie in (0, 1]", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RetentionLayer(std::make_unique<LruPolicy>(), {.hold_priority = 35}),
                       "retention layer: hold priority 35 must lie in (35, 100]",
                       std::invalid_argument);
}

TEST_CASE("retention ranges: bad ranges are refused, naming the request, the range and why") {
  const auto check = [](TokenRangeRetention r, const char* why) {
    const std::vector<TokenRangeRetention> ranges = {{0, 4, 50, 1.0}, r};
    CHECK_THROWS_WITH_AS(check_retention_ranges(ranges, 16, "request 3"), why,
                         std::invalid_argument);
  };
  check({8, 20, 50, 1.0},
        "request 3: retention range 1 [8, 20) ends at token 20, past the "
        "prompt's 16 tokens");
  check({8, 8, 50, 1.0},
        "request 3: retention range 1 [8, 8) starts at token 8, not before its end");
  check({16, TokenRangeRetention::kToEnd, 50, 1.0},
        "request 3: retention range 1 [16, end) starts at token 16, not before its end");
  check({0, 4, 101, 1.0}, "request 3: retention range 1 [0, 4) has priority 101, outside [0, 100]");
  check({0, 4, -1, 1.0}, "request 3: retention range 1 [0, 4) has priority -1, outside [0, 100]");
  check({0, 4, 50, -2.0},
        "request 3: retention range 1 [0, 4) has a duration of -2 seconds; it must be positive "
        "(or forever)");
  const std::vector<TokenRangeRetention> fine = {
      {0, 16, 0, 0.5}, {3, TokenRangeRetention::kToEnd, 100, kRetainForever}};
  CHECK_NOTHROW(check_retention_ranges(fine, 16, "request 3"));
}

}  // namespace
}  // namespace radixkv
