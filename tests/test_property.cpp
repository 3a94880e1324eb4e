// Property test: long seeded runs of PropertyDriver (tests/property_driver.h) for every policy and
// page sizes 1, 2 and 16. Set RADIXKV_SEED to replay a failing seed.
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

uint64_t seed_for(uint64_t fallback) {
  const char* env = std::getenv("RADIXKV_SEED");
  return env ? std::strtoull(env, nullptr, 0) : fallback;
}

void run_property(uint32_t page_tokens, int operations) {
  for (std::string_view policy : policy_names()) {
    const uint64_t seed = seed_for(0x5eed0000 + page_tokens * 131 + policy.size());
    INFO("policy ", policy, ", page_tokens ", page_tokens, ", seed ", seed,
         " (rerun with RADIXKV_SEED=", seed, ")");
    PropertyDriver<SeededSource> driver(policy, page_tokens, SeededSource{std::mt19937_64(seed)});
    REQUIRE_NOTHROW(driver.run(operations));
    // The workload must have reached the paths it exists to test.
    CHECK(driver.stats().splits > 100);
    CHECK(driver.stats().evicted_pages > 1000);
    CHECK(driver.stats().evicted_nodes > 100);
  }
}

}  // namespace

// 3 x 70,000 = 210,000 operations per policy.
TEST_CASE("property: random operations agree with the oracle, page size 1") {
  run_property(1, 70000);
}
TEST_CASE("property: random operations agree with the oracle, page size 2") {
  run_property(2, 70000);
}
TEST_CASE("property: random operations agree with the oracle, page size 16") {
  run_property(16, 70000);
}

namespace {

// The same oracle one level up: the runtime adapter's calls, 3 x 20,000 per policy.
void run_runtime_property(uint32_t page_tokens, int operations) {
  for (std::string_view policy : policy_names()) {
    const uint64_t seed = seed_for(0x12345 + page_tokens * 17 + policy.size());
    INFO("policy ", policy, ", page_tokens ", page_tokens, ", seed ", seed,
         " (rerun with RADIXKV_SEED=", seed, ")");
    RuntimeDriver<SeededSource> driver(policy, page_tokens, SeededSource{std::mt19937_64(seed)});
    REQUIRE_NOTHROW(driver.run(operations));
    CHECK(driver.stats().reused_tokens > 0);
    CHECK(driver.stats().admit_no_space > 0);
    CHECK(driver.stats().admit_too_large > 0);
    CHECK(driver.stats().extend_no_space > 0);
    CHECK(driver.stats().evicted_pages > 100);
  }
}

}  // namespace

TEST_CASE("property: runtime calls agree with the oracle, page sizes 1, 4 and 16") {
  for (uint32_t page_tokens : {1u, 4u, 16u}) run_runtime_property(page_tokens, 20000);
}
