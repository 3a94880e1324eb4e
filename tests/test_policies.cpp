// The typed harness: behaviour every eviction policy shares, run over each policy type, plus the
// factory (names, parameters, errors). Orderings are in test_policies_ordering.cpp; the policies
// driven through the radix tree in test_policies_tree.cpp.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "eviction/fifo_policy.h"
#include "eviction/gdsf_policy.h"
#include "eviction/lfu_policy.h"
#include "eviction/lru_policy.h"
#include "eviction/newest_first_policies.h"
#include "eviction/policy_registry.h"
#include "eviction/priority_policy.h"
#include "eviction/reuse_policy.h"
#include "eviction/sieve_policy.h"
#include "eviction/slru_policy.h"
#include "tests/test_policies_owner.h"

using namespace radixkv;
using radixkv::testing::FakeOwner;

#define RADIXKV_ALL_POLICIES                                                             \
  LruPolicy, LfuPolicy, FifoPolicy, PriorityPolicy, SlruPolicy, SievePolicy, GdsfPolicy, \
      ReusePolicy, MruPolicy, FiloPolicy

namespace {

// Every linked entry, checked against the set the test believes is linked.
void expect_linked_exactly(FakeOwner& owner, const std::set<const EvictionEntry*>& linked) {
  REQUIRE(owner.policy->size() == linked.size());
  for (const EvictionEntry& e : owner.entries) {
    REQUIRE(owner.policy->contains(e) == (linked.count(&e) == 1));
  }
  EvictionEntry* victim = owner.policy->victim();
  if (linked.empty()) {
    REQUIRE(victim == nullptr);
  } else {
    REQUIRE(victim != nullptr);
    REQUIRE(linked.count(victim) == 1);
    // Nothing changed in between, so the next call names the same entry: the tree relies on
    // this when it takes a victim's pages over several calls.
    REQUIRE(owner.policy->victim() == victim);
  }
}

std::string thrown_by(std::string_view spec) {
  try {
    make_policy(spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace

TEST_CASE_TEMPLATE("an empty policy has no victim and is registered by its name", T,
                   RADIXKV_ALL_POLICIES) {
  T policy;
  CHECK(policy.victim() == nullptr);
  CHECK(policy.size() == 0);
  const auto names = policy_names();
  CHECK(std::find(names.begin(), names.end(), policy.name()) != names.end());
  CHECK(make_policy(policy.name())->name() == policy.name());
}

TEST_CASE_TEMPLATE("add, remove, access and victim keep the linked set exact", T,
                   RADIXKV_ALL_POLICIES) {
  FakeOwner owner(std::make_unique<T>());
  std::set<const EvictionEntry*> linked;
  std::vector<EvictionEntry*> all;
  std::mt19937_64 rng(0xbeef + owner.policy->name().size());
  const auto pick = [&] { return all[rng() % all.size()]; };
  // In creation order, not address order, so that a seed means the same run in every build.
  const auto pick_linked = [&] {
    size_t k = rng() % linked.size();
    for (EvictionEntry* e : all) {
      if (linked.count(e) == 1 && k-- == 0) return e;
    }
    return static_cast<EvictionEntry*>(nullptr);
  };
  for (int op = 0; op < 6000; ++op) {
    const int choice = static_cast<int>(rng() % 100);
    const auto priority = static_cast<int32_t>(rng() % 101);
    if (choice < 15 || all.empty()) {  // a new leaf
      EvictionEntry& e = owner.create(priority, 1 + rng() % 4, rng() % 30);
      all.push_back(&e);
      linked.insert(&e);
    } else if (choice < 35) {  // an access, linked or not: links nothing, unlinks nothing
      owner.touch(*pick(), priority);
    } else if (choice < 50 && linked.size() < all.size()) {  // unpinned, or a parent became leaf
      EvictionEntry* e = pick();
      if (linked.count(e) == 0) {
        owner.policy->add(*e);
        linked.insert(e);
      }
    } else if (choice < 65 && !linked.empty()) {  // pinned, or gained a child
      EvictionEntry* e = pick_linked();
      owner.policy->remove(*e);
      linked.erase(e);
    } else if (choice < 80 && !linked.empty()) {  // the tree evicts its victim entirely
      EvictionEntry* e = owner.policy->victim();
      REQUIRE(linked.count(e) == 1);
      owner.policy->remove(*e);
      linked.erase(e);
    } else {
      owner.now += static_cast<double>(rng() % 1000) / 100.0;
      owner.output_tokens = static_cast<uint32_t>(rng() % 4096);  // a new request class
    }
    expect_linked_exactly(owner, linked);
  }
}

TEST_CASE_TEMPLATE("a policy whose victim stays first names it until it is gone, pages aside", T,
                   RADIXKV_ALL_POLICIES) {
  // What RadixTree::evict_pages relies on to take a run of pages per victim() (the promise of
  // victim_stays_first): the same answer while the entry loses pages, and an order the removal of
  // a drained entry moves on exactly as the drain predicts: the whole drain, run by run, visits
  // the entries in the order that asking per page would have.
  FakeOwner per_page(std::make_unique<T>());
  FakeOwner per_run(std::make_unique<T>());
  if (!per_run.policy->victim_stays_first()) return;  // asks per page: nothing promised
  std::mt19937_64 rng(29);
  for (int i = 0; i < 120; ++i) {
    const auto priority = static_cast<int32_t>(rng() % 101);
    const auto pages = static_cast<uint32_t>(1 + rng() % 5);
    per_page.create(priority, pages);
    per_run.create(priority, pages);
    if (rng() % 3 == 0) {
      const size_t k = rng() % per_page.entries.size();
      per_page.touch(per_page.entries[k], priority);
      per_run.touch(per_run.entries[k], priority);
    }
  }
  const auto index = [](FakeOwner& owner, const EvictionEntry* e) {
    for (size_t i = 0; i < owner.entries.size(); ++i) {
      if (&owner.entries[i] == e) return i;
    }
    return owner.entries.size();
  };
  std::vector<size_t> asked_per_page, asked_per_run;
  while (EvictionEntry* e = per_page.policy->victim()) {  // a page per answer
    asked_per_page.push_back(index(per_page, e));
    if (--e->pages == 0) per_page.policy->remove(*e);
  }
  while (EvictionEntry* e = per_run.policy->victim()) {  // a whole run per answer
    for (; e->pages > 0; --e->pages) asked_per_run.push_back(index(per_run, e));
    per_run.policy->remove(*e);
  }
  CHECK(asked_per_run == asked_per_page);
}

TEST_CASE_TEMPLATE("draining by victims yields every linked entry exactly once", T,
                   RADIXKV_ALL_POLICIES) {
  FakeOwner owner(std::make_unique<T>());
  std::mt19937_64 rng(17);
  for (int i = 0; i < 200; ++i) {
    EvictionEntry& e = owner.create(static_cast<int32_t>(rng() % 101), 1 + rng() % 3, rng() % 9);
    for (uint64_t k = rng() % 4; k > 0; --k) owner.touch(e, static_cast<int32_t>(rng() % 101));
  }
  // Some entries stay unlinked (pinned) throughout: they are never offered.
  for (size_t i = 0; i < owner.entries.size(); i += 7) owner.policy->remove(owner.entries[i]);
  std::set<const EvictionEntry*> seen;
  while (EvictionEntry* e = owner.policy->victim()) {
    REQUIRE(owner.policy->contains(*e));
    REQUIRE(seen.insert(e).second);
    owner.policy->remove(*e);
  }
  CHECK(seen.size() == 200 - 29);
  CHECK(owner.policy->size() == 0);
}

// The tree looks several victims ahead to prefetch their memory (radix/tree_internals.h).
// next_victim_after must name exactly the victims to come, and change nothing on the way.
TEST_CASE_TEMPLATE("next_victim_after names the coming victims exactly and changes nothing", T,
                   RADIXKV_ALL_POLICIES) {
  FakeOwner owner(std::make_unique<T>());
  std::mt19937_64 rng(0x5eed + owner.policy->name().size());
  const bool may_not_tell = owner.policy->name() == "sieve";  // past 16 visited entries, or a wrap
  uint64_t named = 0, checked = 0;
  for (int round = 0; round < 400; ++round) {
    // Between rounds the world moves: new leaves, accesses (hits set SIEVE's bits, promote in
    // SLRU, re-key LRU/LFU/GDSF), time passing (priority expiry, reuse classes), pinning.
    for (int op = 0; op < 8; ++op) {
      const int choice = static_cast<int>(rng() % 10);
      if (choice < 4 || owner.entries.empty()) {
        owner.create(static_cast<int32_t>(rng() % 101), 1 + rng() % 4, rng() % 30);
      } else if (choice < 8) {
        owner.touch(owner.entries[rng() % owner.entries.size()], static_cast<int32_t>(rng() % 101));
      } else {
        owner.now += static_cast<double>(rng() % 1000) / 100.0;
        owner.output_tokens = static_cast<uint32_t>(rng() % 4096);
      }
    }
    EvictionEntry* victim = owner.policy->victim();
    if (victim == nullptr) continue;
    // Look up to 6 ahead, then check that looking changed nothing.
    std::vector<const EvictionEntry*> ahead;
    for (const EvictionEntry* e = victim; ahead.size() < 6;) {
      e = owner.policy->next_victim_after(*e);
      if (e == nullptr) break;
      REQUIRE(owner.policy->contains(*e));
      REQUIRE(std::find(ahead.begin(), ahead.end(), e) == ahead.end());
      REQUIRE(e != victim);
      ahead.push_back(e);
    }
    // The same walk in one call.
    std::array<const EvictionEntry*, 6> batch{};
    REQUIRE(owner.policy->next_victims_after(*victim, batch) == ahead.size());
    REQUIRE(std::equal(ahead.begin(), ahead.end(), batch.begin()));
    const size_t size = owner.policy->size();
    if (!may_not_tell) REQUIRE(ahead.size() == std::min<size_t>(6, size - 1));
    REQUIRE(owner.policy->size() == size);
    // Evict them in turn, as evict_pages does (several victim() calls per entry, one per page).
    owner.policy->remove(*victim);
    for (const EvictionEntry* expected : ahead) {
      EvictionEntry* next = owner.policy->victim();
      REQUIRE(next == expected);
      REQUIRE(owner.policy->victim() == next);
      owner.policy->remove(*next);
      ++checked;
    }
    named += ahead.size();
  }
  // The check above ran on a good share of victims, for SIEVE too.
  CHECK(checked == named);
  CHECK(named > 200);
}

TEST_CASE_TEMPLATE("accessing entries that were never linked links nothing", T,
                   RADIXKV_ALL_POLICIES) {
  FakeOwner owner(std::make_unique<T>());
  EvictionEntry& inner = owner.create_unlinked();
  for (int i = 0; i < 5; ++i) owner.touch(inner, 90);
  CHECK_FALSE(owner.policy->contains(inner));
  CHECK(owner.policy->size() == 0);
  CHECK(owner.policy->victim() == nullptr);
  owner.policy->add(inner);
  CHECK(owner.policy->victim() == &inner);
}

TEST_CASE("policy_names lists each policy once and make_policy builds each") {
  const auto names = policy_names();
  CHECK(names.size() == 10);
  CHECK(std::set<std::string_view>(names.begin(), names.end()).size() == names.size());
  for (std::string_view name : names) CHECK(make_policy(name)->name() == name);
}

TEST_CASE("make_policy takes parameters after a colon") {
  const auto slru = make_policy("slru:protected=0.25");
  CHECK(slru->name() == "slru");
  const auto priority = make_policy("priority:retention=30");
  CHECK(dynamic_cast<PriorityPolicy&>(*priority).retention_seconds() == 30.0);
  CHECK(dynamic_cast<PriorityPolicy&>(*make_policy("priority:retention=inf")).retention_seconds() ==
        PriorityPolicy::kForever);
  EvictionEntry e;
  e.prefix_pages = 10;
  e.pages = 4;
  CHECK(dynamic_cast<GdsfPolicy&>(*make_policy("gdsf:depth_pages=12")).cost_per_page(e) ==
        doctest::Approx(2.0));
  CHECK(dynamic_cast<GdsfPolicy&>(*make_policy("gdsf:depth_pages=inf")).cost_per_page(e) == 1.0);
  CHECK(make_policy("lru:")->name() == "lru");
  CHECK(make_policy("reuse:limit=0,prior=2")->name() == "reuse");
  CHECK(make_policy("reuse:limit=inf")->name() == "reuse");
}

TEST_CASE("make_policy names the spec and the problem in its errors") {
  struct Case {
    std::string_view spec;
    std::string_view expected;
  };
  for (const Case c : {Case{"lirs", "unknown eviction policy 'lirs' (known: lru, lfu"},
                       Case{"", "unknown eviction policy ''"},
                       Case{"lru:size=3", "'lru:size=3': unknown parameter 'size' (known: none)"},
                       Case{"slru:protect=0.5", "unknown parameter 'protect' (known: protected)"},
                       Case{"slru:protected=1.5", "protected fraction 1.5 is outside [0, 1]"},
                       Case{"slru:protected", "parameter 'protected' is not key=value"},
                       Case{"slru:protected=", "value '' of parameter 'protected' is not a number"},
                       Case{"slru:protected=0.5x", "value '0.5x' of parameter"},
                       Case{"slru:protected=nan", "value 'nan' of parameter"},
                       Case{"priority:retention=0", "retention of 0 seconds must be positive"},
                       Case{"priority:retention=-5", "retention of -5 seconds"},
                       Case{"gdsf:depth_pages=0", "depth_pages 0 must be positive"},
                       Case{"reuse:limit=-1", "reuse policy: limit -1 must be at least 0"},
                       Case{"reuse:prior=0", "reuse policy: prior 0 must be finite and positive"},
                       Case{"reuse:tau=1", "unknown parameter 'tau' (known: limit, prior)"},
                       Case{"sieve:=1", "parameter '=1' is not key=value"}}) {
    CAPTURE(c.spec);
    const std::string message = thrown_by(c.spec);
    CHECK_MESSAGE(message.find(c.expected) != std::string::npos, message);
  }
}

TEST_CASE("the policy registry: one entry per name, defaults applied, help from the table") {
  const auto registry = policy_registry();
  REQUIRE(registry.size() == policy_names().size());
  for (std::size_t i = 0; i < registry.size(); ++i) {
    const PolicyInfo& info = registry[i];
    CAPTURE(info.name);
    CHECK(policy_names()[i] == info.name);
    CHECK_FALSE(info.summary.empty());
    // make_policy fills in each default: NAME alone builds what NAME:key=default builds.
    std::string spec(info.name);
    for (std::size_t k = 0; k < info.parameters.size(); ++k) {
      const double v = info.parameters[k].default_value;
      spec += fmt::format("{}{}={}", k == 0 ? ":" : ",", info.parameters[k].key,
                          std::isinf(v) ? std::string("inf") : fmt::format("{}", v));
    }
    CHECK(make_policy(spec)->name() == info.name);
    CHECK(info.make(std::vector<double>(info.parameters.size(), 0.5))->name() == info.name);
  }
  const std::string help = policy_help();
  CHECK(help.find("  gdsf ") != std::string::npos);
  CHECK(help.find("    depth_pages=PAGES") != std::string::npos);
  CHECK(help.find("[1024]") != std::string::npos);
  // The defaults really are the ones make_policy uses.
  EvictionEntry e;
  e.prefix_pages = 1024;
  e.pages = 0;
  CHECK(dynamic_cast<GdsfPolicy&>(*make_policy("gdsf")).cost_per_page(e) == doctest::Approx(2.0));
  CHECK(dynamic_cast<PriorityPolicy&>(*make_policy("priority")).retention_seconds() ==
        PriorityPolicy::kForever);
}
