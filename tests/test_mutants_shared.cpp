// Tests that kill mutants of scripts/mutate.sh that no other test caught: how SharedRuntime
// spreads namespaces over its shards.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/shared_runtime.h"

using namespace radixkv;

TEST_CASE("SharedRuntime: namespaces 0, 1, 2, ... spread evenly over the shards") {
  // Mutant shared-one-shard: every namespace on shard 0 still works, with a quarter of the pool.
  for (const uint32_t shards : {2u, 3u, 4u, 8u}) {
    CAPTURE(shards);
    const SharedRuntime cache(KvLayout{}, 64, shards);
    std::vector<uint32_t> count(shards, 0);
    constexpr uint32_t kNamespaces = 1000;
    for (Namespace ns = 0; ns < kNamespaces; ++ns) {
      const uint32_t shard = cache.shard_of(ns);
      REQUIRE(shard < shards);
      ++count[shard];
    }
    // The multiplicative hash gives each shard within 10 % of its even share.
    for (const uint32_t n : count) {
      CHECK(n * 10 >= kNamespaces / shards * 9);
      CHECK(n * 10 <= kNamespaces / shards * 11);
    }
  }
}

TEST_CASE("SharedRuntime: each shard serves its namespaces from its own pool") {
  // 4 shards of 4 pages of 16 tokens. One 64-token prompt fills a shard's pool, so one request in
  // a namespace of each shard runs at once; a second one on an occupied shard finds no space.
  SharedRuntime cache(KvLayout{}, 16, 4);
  std::vector<Namespace> one_per_shard(4, ~Namespace{0});
  for (Namespace ns = 0; ns < 64; ++ns) {
    Namespace& slot = one_per_shard[cache.shard_of(ns)];
    if (slot == ~Namespace{0}) slot = ns;
  }
  std::vector<TokenId> prompt(64, 7);
  std::vector<SharedHandle> running;
  for (const Namespace ns : one_per_shard) {
    CAPTURE(ns);
    REQUIRE(ns != ~Namespace{0});
    const SharedAdmit admitted = cache.admit({ns, ns, prompt, kDefaultPriority});
    REQUIRE(admitted.ok());
    CHECK(admitted.block_table.size() == 4);
    running.push_back(admitted.handle);
  }
  const SharedAdmit refused = cache.admit({99, one_per_shard[0], prompt, kDefaultPriority});
  CHECK(refused.status == RuntimeStatus::kNoSpace);
  for (const SharedHandle handle : running) cache.abort(handle);
  CHECK(cache.check() == 0);
}
