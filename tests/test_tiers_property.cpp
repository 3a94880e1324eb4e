// Property tests of the host tier: long seeded runs of TierDriver (tests/tier_driver.h) under
// every write policy, at page sizes 1 and 4: with LRU on both tiers against the two-tier page
// oracle victim by victim, with other policies against the accounting, the invariants and the
// event consumer. Set RADIXKV_SEED to replay a failing seed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>

#include "tests/tier_driver.h"

using namespace radixkv;
using radixkv::testing::TierDriver;
using radixkv::testing::TierRunConfig;
using radixkv::testing::TierRunStats;

namespace {

struct SeededSource {
  std::mt19937_64 rng;
  uint64_t operator()() { return rng(); }
  bool has_more() const { return true; }
};

TierRunStats run(const TierRunConfig& config, uint32_t page_tokens, uint64_t seed, int calls) {
  const char* forced = std::getenv("RADIXKV_SEED");
  if (forced) seed = std::strtoull(forced, nullptr, 0);
  INFO("write ", config.write, ", policies ", config.device_policy, "/", config.host_policy,
       ", host watermarks ", config.host_high, "/", config.host_low, ", page_tokens ", page_tokens,
       ", seed ", seed, " (rerun with RADIXKV_SEED=", seed, ")");
  TierDriver<SeededSource> driver(config, page_tokens, SeededSource{std::mt19937_64(seed)});
  TierRunStats stats;
  REQUIRE_NOTHROW(stats = driver.run(calls));
  return stats;
}

}  // namespace

TEST_CASE("property: two tiers under LRU agree with the two-tier page oracle, victim by victim") {
  for (const std::string write : {"write_back", "write_through"}) {
    for (uint32_t page_tokens : {1u, 4u}) {
      for (const auto& [high, low] : {std::pair{1.0, 1.0}, std::pair{0.9, 0.6}}) {
        CAPTURE(write);
        CAPTURE(page_tokens);
        CAPTURE(high);
        const TierRunStats s =
            run({write, "lru", "lru", high, low}, page_tokens, 0x7135 + page_tokens, 6000);
        CHECK(s.oracle_checks > 5000);  // the oracle was compared (no tie stopped it early)
        CHECK(s.runtime.host_hit_tokens > 0);
        CHECK(s.runtime.admit_no_space > 0);
        CHECK(s.tree.written_pages > 100);
        CHECK(s.tree.loaded_pages > 30);
        CHECK(s.tree.host_evicted_pages > 10);
        CHECK(s.events > 1000);
        CHECK(s.droppings > 10);
      }
    }
  }
}

TEST_CASE("property: pools that are partitions (ids not from 0) give the same runs as plain ones") {
  for (const std::string write : {"write_back", "write_through"}) {
    CAPTURE(write);
    TierRunConfig plain{write, "lru", "lru", 0.9, 0.6};
    TierRunConfig partitioned = plain;
    partitioned.partitioned = true;
    const TierRunStats a = run(plain, 4, 0x5eed, 3000);
    const TierRunStats b = run(partitioned, 4, 0x5eed, 3000);
    CHECK(b.runtime.host_hit_tokens == a.runtime.host_hit_tokens);
    CHECK(b.runtime.reused_tokens == a.runtime.reused_tokens);
    CHECK(b.tree.loaded_pages == a.tree.loaded_pages);
    CHECK(b.events == a.events);
    CHECK(b.oracle_checks > 0);
  }
}

TEST_CASE("property: every write policy and other policies keep both tiers' accounting") {
  for (const std::string write :
       {"write_back", "write_through", "write_through_selective:hits=2"}) {
    for (const auto& [device, host] :
         {std::pair{"lfu", "fifo"}, std::pair{"gdsf", "sieve"}, std::pair{"lru", "lru"}}) {
      for (uint32_t page_tokens : {1u, 4u}) {
        CAPTURE(write);
        CAPTURE(device);
        CAPTURE(host);
        CAPTURE(page_tokens);
        const TierRunStats s =
            run({write, device, host, 0.9, 0.6}, page_tokens, 0x7135 + page_tokens, 4000);
        CHECK(s.runtime.host_hit_tokens > 0);
        CHECK(s.tree.written_pages > 0);
        CHECK(s.tree.loaded_pages > 0);
        CHECK(s.events > 500);
      }
    }
  }
}
