// Property tests: long seeded runs of PropertyDriver (the tree, the pool and the budget;
// tests/property_driver.h) and RuntimeDriver (the runtime adapter; tests/runtime_driver.h) for
// every policy at several page sizes. Set RADIXKV_SEED to replay a failing seed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>

#include "tests/property_driver.h"
#include "tests/runtime_driver.h"

using namespace radixkv;
using radixkv::testing::PropertyDriver;
using radixkv::testing::RuntimeDriver;

namespace {

struct SeededSource {
  std::mt19937_64 rng;
  uint64_t operator()() { return rng(); }
  bool has_more() const { return true; }
};

// Runs `Driver` once per policy, each with a seed of its own (or RADIXKV_SEED), and hands its
// stats to `reached`, which checks that the run reached the paths it exists to test.
template <template <typename> class Driver, typename Reached>
void for_every_policy(uint32_t page_tokens, int operations, Reached&& reached) {
  const char* forced = std::getenv("RADIXKV_SEED");
  const std::vector<std::string_view> names = policy_names();
  for (size_t i = 0; i < names.size(); ++i) {
    const uint64_t seed =
        forced ? std::strtoull(forced, nullptr, 0) : 0x5eed0000 + page_tokens * 131 + i;
    INFO("policy ", names[i], ", page_tokens ", page_tokens, ", seed ", seed,
         " (rerun with RADIXKV_SEED=", seed, ")");
    Driver<SeededSource> driver(names[i], page_tokens, SeededSource{std::mt19937_64(seed)});
    REQUIRE_NOTHROW(driver.run(operations));
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

// 3 x 70,000 = 210,000 operations per policy.
TEST_CASE("property: random operations agree with the oracle, page size 1") { tree_property(1); }
TEST_CASE("property: random operations agree with the oracle, page size 2") { tree_property(2); }
TEST_CASE("property: random operations agree with the oracle, page size 16") { tree_property(16); }

// The same oracle one level up: 3 x 20,000 runtime calls per policy.
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
