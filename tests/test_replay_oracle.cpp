// Cache-mode replay against the naive oracle of tests/replay_oracle.h, on generated traces and
// random Mooncake-style block traces, for LRU and FIFO.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/replay_oracle.h"
#include "tests/small_traces.h"
#include "tools/replay/cache_replay.h"
#include "tools/trace/random.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

using radixkv::testing::oracle_replay;
using radixkv::testing::OracleResult;

void compare_policy(const Trace& trace, uint32_t page_tokens, uint64_t capacity,
                    const std::string& policy) {
  CAPTURE(page_tokens);
  CAPTURE(capacity);
  CAPTURE(policy);
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 1, 2, page_tokens};
  config.capacity_pages = capacity;
  config.policy = policy;
  const ReplayResult got = replay_cache(trace, config);
  const OracleResult want = oracle_replay(trace, page_tokens, capacity, policy == "fifo");
  CHECK(got.hit_tokens == want.hit_tokens);
  CHECK(got.evicted_pages == want.evicted_pages);
  CHECK(got.inserted_pages == want.inserted_pages);
  CHECK(got.uncached_pages == want.uncached_pages);
  CHECK(got.pages_leaked == 0);
  CHECK(got.accounting_error == "");
}

void compare(const Trace& trace, uint32_t page_tokens, uint64_t capacity) {
  for (const char* policy : {"lru", "fifo"}) {
    compare_policy(trace, page_tokens, capacity, policy);
  }
}

}  // namespace

TEST_CASE("cache mode equals the naive oracle on generated multi-turn traces") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    GenConfig config = radixkv::testing::small_gen_config(seed);
    config.conversations = 30;
    config.system_prompts = 4;
    config.namespaces = 1 + seed % 2;
    const Trace trace = radixkv::testing::generated_trace(config);
    for (uint32_t page_tokens : {1u, 3u, 8u}) {
      for (uint64_t capacity : {2u, 7u, 25u, 80u}) compare(trace, page_tokens, capacity);
    }
  }
}

TEST_CASE("cache mode equals the naive oracle on random Mooncake-style block traces") {
  const Trace trace = radixkv::testing::random_block_trace(42, 120);
  for (uint64_t capacity : {1u, 4u, 10u, 30u}) compare(trace, 512, capacity);
  compare(trace, 128, 40);
}
