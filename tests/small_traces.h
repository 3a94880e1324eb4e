// Small generated traces for the replay tests: the generator's defaults cut down to a few tokens
// per message so a trace of a few dozen conversations replays in milliseconds, yet keeps every
// kind of sharing (system prompts, multi-turn, agent steps with tools, regenerations, edits).
// Callers set the conversation, system-prompt and namespace counts they want.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "tools/trace/random.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"

namespace radixkv::testing {

inline tools::GenConfig small_gen_config(uint64_t seed) {
  using tools::Distribution;
  tools::GenConfig config;
  config.seed = seed;
  config.turns = Distribution::parse("uniform:1:5", "--turns");
  config.system_tokens = Distribution::parse("uniform:4:40", "--system-tokens");
  config.message_tokens = Distribution::parse("uniform:1:12", "--message-tokens");
  config.answer_tokens = Distribution::parse("uniform:1:12", "--answer-tokens");
  config.tool_tokens = Distribution::parse("uniform:1:20", "--tool-tokens");
  config.agent_steps = Distribution::parse("uniform:1:6", "--agent-steps");
  config.regenerate = 0.2;
  config.edit = 0.2;
  return config;
}

// The trace `config` generates, parsed as the replay tools read it.
inline tools::Trace generated_trace(const tools::GenConfig& config) {
  return tools::parse_native(tools::generate_native(config), "gen");
}

// A random Mooncake-style trace of 512-token blocks with prefix-hashed block ids, as text: each
// request extends one of `stems` shared stems of up to three blocks with blocks of its own.
inline std::string random_block_text(uint64_t seed, int requests, int stems = 5) {
  tools::Rng rng(seed);
  std::string text;
  for (int r = 0; r < requests; ++r) {
    const int stem = static_cast<int>(rng.below(static_cast<uint64_t>(stems)));
    const int blocks = 1 + static_cast<int>(rng.below(6));
    std::string ids;
    for (int b = 0; b < blocks; ++b) {
      const int id = b < 3 ? stem * 100 + b : 1000 + r * 10 + b;
      ids += fmt::format("{}{}", b ? "," : "", id);
    }
    const int input = (blocks - 1) * 512 + 1 + static_cast<int>(rng.below(512));
    text += fmt::format(
        "{{\"timestamp\": {}, \"input_length\": {}, \"output_length\": 1, \"hash_ids\": [{}]}}\n",
        r, input, ids);
  }
  return text;
}

// The same, parsed.
inline tools::Trace random_block_trace(uint64_t seed, int requests) {
  return tools::parse_mooncake(random_block_text(seed, requests), "random");
}

}  // namespace radixkv::testing
