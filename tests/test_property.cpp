// Property tests: long seeded runs of PropertyDriver (the tree, the pool and the budget;
// tests/property_driver.h) and RuntimeDriver (the runtime adapter; tests/runtime_driver.h) for
// every policy, and a few with parameters away from their defaults, at several page sizes. Both
// compare every eviction with the policy's reference model (tests/policy_models.h) victim by
// victim. Set RADIXKV_SEED to replay a failing seed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "tests/property_driver.h"
#include "tests/runtime_driver.h"

using namespace radixkv;
using radixkv::testing::PolicyModel;
using radixkv::testing::PropertyDriver;
using radixkv::testing::RuntimeDriver;

namespace {

struct SeededSource {
  std::mt19937_64 rng;
  uint64_t operator()() { return rng(); }
  bool has_more() const { return true; }
};

// Every policy with its defaults, then parameters that make the rules bite in small caches: a
// retention that runs out within a few dozen accesses, a protected segment half as large, depth
// that weighs as much as hits, and a reuse shift cut to a quarter of the victims' age.
// A spec's seed follows its place in this list, and each run's coverage checks (splits, evictions)
// were met with those seeds: policies added later (mru, filo) go last, so the others keep theirs.
std::vector<std::string_view> policy_specs() {
  std::vector<std::string_view> specs = policy_names();
  const auto added_later = std::ranges::stable_partition(
      specs, [](std::string_view name) { return name != "mru" && name != "filo"; });
  const std::vector<std::string_view> later(added_later.begin(), added_later.end());
  specs.erase(added_later.begin(), added_later.end());
  for (std::string_view spec :
       {"priority:retention=5", "slru:protected=0.5", "gdsf:depth_pages=4", "reuse:limit=0.25"}) {
    specs.push_back(spec);
  }
  specs.insert(specs.end(), later.begin(), later.end());
  return specs;
}

// Runs `Driver` once per policy spec, each with a seed of its own (or RADIXKV_SEED), checks that
// the run reached the policy's own rule and re-offered parents, and hands its stats to `reached`,
// which checks that the run reached the paths it exists to test.
template <template <typename> class Driver, typename Reached>
void for_every_policy(uint32_t page_tokens, int operations, Reached&& reached) {
  const char* forced = std::getenv("RADIXKV_SEED");
  const std::vector<std::string_view> specs = policy_specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    const uint64_t seed =
        forced ? std::strtoull(forced, nullptr, 0) : 0x5eed0000 + page_tokens * 131 + i;
    INFO("policy ", specs[i], ", page_tokens ", page_tokens, ", seed ", seed,
         " (rerun with RADIXKV_SEED=", seed, ")");
    Driver<SeededSource> driver(specs[i], page_tokens, SeededSource{std::mt19937_64(seed)});
    REQUIRE_NOTHROW(driver.run(operations));
    const PolicyModel& model = driver.model().policy();
    INFO("the policy's rule: ", model.rule());
    CHECK((model.rule().empty() || model.rule_events() > 0));
    CHECK(driver.model().stats().parents_offered > 0);
    reached(driver.stats());
  }
}

void tree_property(uint32_t page_tokens) {
  for_every_policy<PropertyDriver>(page_tokens, 70000, [](const TreeStats& stats) {
    CHECK(stats.splits > 100);
    CHECK(stats.evicted_pages > 1000);
    CHECK(stats.evicted_nodes > 100);
  });
}

}  // namespace

// 3 x 70,000 = 210,000 operations per policy spec.
TEST_CASE("property: random operations agree with the oracle, page size 1") { tree_property(1); }
TEST_CASE("property: random operations agree with the oracle, page size 2") { tree_property(2); }
TEST_CASE("property: random operations agree with the oracle, page size 16") { tree_property(16); }

// The same oracle and models one level up: 3 x 20,000 runtime calls per policy spec.
TEST_CASE("property: runtime calls agree with the oracle, page sizes 1, 4 and 16") {
  for (uint32_t page_tokens : {1u, 4u, 16u}) {
    for_every_policy<RuntimeDriver>(page_tokens, 20000, [](const RuntimeStats& stats) {
      CHECK(stats.reused_tokens > 0);
      CHECK(stats.admit_no_space > 0);
      CHECK(stats.admit_too_large > 0);
      CHECK(stats.extend_no_space > 0);
      CHECK(stats.evicted_pages > 100);
    });
  }
}

// Page hashes and tier events take the general eviction path: the victims must be the same.
TEST_CASE(
    "property: with tier events on, runtime calls agree with the oracle, page sizes 1 and 4") {
  const std::vector<std::string_view> specs = policy_specs();
  for (uint32_t page_tokens : {1u, 4u}) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const uint64_t seed = 0xe7e0000 + page_tokens * 131 + i;
      INFO("policy ", specs[i], ", page_tokens ", page_tokens, ", seed ", seed);
      RuntimeDriver<SeededSource> driver(specs[i], page_tokens, SeededSource{std::mt19937_64(seed)},
                                         /*events=*/true);
      REQUIRE_NOTHROW(driver.run(8000));
      CHECK(driver.stats().evicted_pages > 100);
    }
  }
}
