// `radixkv gen`: synthetic multi-turn traces in the native format (docs/trace_format.md).
//
// The workload it models:
//   - Conversations arrive as a Poisson process (`rate` per second). Each belongs to a namespace
//     (uniform over `namespaces`), has a priority (uniform over `priorities`), and opens with a
//     system prompt drawn from a pool whose popularity is Zipf(`zipf`) distributed.
//   - A chat has `turns` turns; turn k's prompt is turn k-1's prompt + its answer + a new user
//     message, arriving a think time after turn k-1.
//   - Branching: with probability `regenerate` a turn is asked again (same prompt, new answer);
//     with probability `edit` the user edits an earlier turn (same history up to it, a new
//     message). The conversation continues from the new branch.
//   - A fraction `agent_fraction` of conversations are agent loops: a task, then `agent_steps`
//     steps, each adding a short tool call (the answer) and a long tool result to the context,
//     arriving a tool time after the step before.
//   - Sub-agents: with probability `subagent_chance` an agent step starts `subagents` sub-agents
//     at once instead of a tool. Each opens with its agent's system prompt and a task of its own,
//     runs `subagent_steps` tool steps, and its result (a tool result) joins the agent's context
//     once the last sub-agent is done. A conversation is a session (written as "conv"); its
//     sub-agents are numbered 1, 2, ... in the order they start ("agent", absent for the main
//     agent).
// `agents_preset()` is `radixkv gen --agents`: agent sessions only, with sub-agents and
// heavy-tailed tool times, well over 100 of them running at once.
// Deterministic: the same config (seed included) gives the same bytes, on any machine.
//
// What it writes, `radixkv replay` reads: a configuration whose trace would break a reader's limit
// (a prompt or an answer longer than kMaxInputTokens, a namespace beyond 2^53) is refused with a
// UsageError naming the flags to change, before anything is written.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tools/trace/distribution.h"
#include "tools/trace/trace.h"

namespace radixkv::tools {

// Held in memory while generating (the trace is sorted by arrival before it is written).
inline constexpr uint64_t kMaxConversations = 10'000'000;
inline constexpr uint64_t kMaxSystemPrompts = 10'000'000;
// Native ids and namespaces stay exact in any JSON reader (doubles hold 2^53 exactly).
inline constexpr uint64_t kMaxNamespaces = uint64_t{1} << 53;

struct GenConfig {
  uint64_t seed = 1;
  uint64_t conversations = 500;
  Distribution turns = Distribution::parse("uniform:1:8", "--turns");
  uint64_t system_prompts = 16;
  double zipf = 1.0;
  Distribution system_tokens = Distribution::parse("lognormal:2000:0.5", "--system-tokens");
  Distribution message_tokens = Distribution::parse("lognormal:200:0.8", "--message-tokens");
  Distribution answer_tokens = Distribution::parse("lognormal:300:0.6", "--answer-tokens");
  Distribution think_s = Distribution::parse("exp:30", "--think-time");
  double rate = 1.0;  // conversations per second
  double regenerate = 0.05;
  double edit = 0.05;
  double agent_fraction = 0.2;
  Distribution agent_steps = Distribution::parse("uniform:4:24", "--agent-steps");
  Distribution tool_tokens = Distribution::parse("lognormal:600:1.0", "--tool-tokens");
  Distribution tool_call_tokens = Distribution::parse("lognormal:60:0.5", "--tool-call-tokens");
  Distribution tool_time_s = Distribution::parse("exp:2", "--tool-time");
  double subagent_chance = 0.0;
  Distribution subagents = Distribution::parse("uniform:1:3", "--subagents");
  Distribution subagent_steps = Distribution::parse("uniform:2:8", "--subagent-steps");
  uint64_t namespaces = 1;
  std::vector<int32_t> priorities = {kDefaultPriority};

  // Throws UsageError naming the flag of the first impossible field.
  void validate() const;
};

// `radixkv gen --agents`: every conversation an agent session (400 of them, 2 starting a second),
// a step starting sub-agents with probability 0.15, tool times lognormal with mean 6 s and
// sigma 1. Steps take 14 tool times on average, so about 2 * 14 * 6 = 168 sessions run at once
// (Little's law) once the first ones have ended.
GenConfig agents_preset();

// The trace as native JSONL: a header line, then one request a line in arrival order. Throws
// UsageError (nothing written) for a configuration replay could not read.
void write_native(const GenConfig& config, std::ostream& out);
std::string generate_native(const GenConfig& config);
// The trace parse_native(generate_native(config), source) reads, field for field, built without
// the text in between (the built-in trace of `radixkv replay`). Throws as write_native does.
Trace generate_trace(const GenConfig& config, std::string source);

}  // namespace radixkv::tools
