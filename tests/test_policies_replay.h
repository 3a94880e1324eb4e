// Replay helpers shared by the belady tests: small generated traces, one cache-mode run, and the
// check that the bound is never below any policy.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/small_traces.h"
#include "tools/replay/belady_policy.h"
#include "tools/replay/cache_replay.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"

namespace radixkv::testing {

using namespace radixkv::tools;

// Small multi-turn traces with branches and two namespaces: many shared prefixes.
inline Trace small_trace(uint64_t seed, uint64_t conversations = 25) {
  GenConfig config = small_gen_config(seed);
  config.conversations = conversations;
  config.system_prompts = 3;
  config.namespaces = 2;
  return generated_trace(config);
}

inline ReplayResult replay(const Trace& trace, uint32_t P, uint64_t capacity,
                           const std::string& policy,
                           std::shared_ptr<const NextUseIndex> index = nullptr) {
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 1, 2, P};
  config.capacity_pages = capacity;
  config.policy = policy;
  if (policy == kBeladyPolicyName) use_belady(config, index);
  return replay_cache(trace, config);
}

// belady >= every online policy, each run clean, at each capacity.
inline void check_bound(const Trace& trace, uint32_t P, const std::vector<uint64_t>& capacities) {
  const auto index = std::make_shared<const NextUseIndex>(trace, P);
  for (uint64_t capacity : capacities) {
    CAPTURE(capacity);
    const ReplayResult bound = replay(trace, P, capacity, "belady", index);
    REQUIRE(bound.ok());
    for (std::string_view name : policy_names()) {
      CAPTURE(name);
      const ReplayResult online = replay(trace, P, capacity, std::string(name));
      REQUIRE(online.ok());
      CHECK(bound.hit_tokens >= online.hit_tokens);
    }
  }
}

}  // namespace radixkv::testing
