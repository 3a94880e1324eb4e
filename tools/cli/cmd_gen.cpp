// `radixkv gen`: flags -> GenConfig -> native JSONL on stdout or in --out.
#include <fmt/format.h>

#include <fstream>
#include <ostream>

#include "tools/cli/args.h"
#include "tools/cli/cli.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

std::vector<FlagSpec> gen_flags() {
  const GenConfig d;
  return {
      {"out", "PATH", "write the trace here instead of stdout"},
      {"seed", "N",
       fmt::format("random seed; equal seeds give identical bytes (default {})", d.seed)},
      {"conversations", "N",
       fmt::format("conversations, chats and agent loops (default {})", d.conversations)},
      {"turns", "DIST", fmt::format("turns per chat (default {})", d.turns.to_string())},
      {"system-prompts", "N",
       fmt::format("size of the shared system prompt pool (default {})", d.system_prompts)},
      {"zipf", "S",
       fmt::format("Zipf exponent of system prompt popularity; 0 = uniform (default {})", d.zipf)},
      {"system-tokens", "DIST",
       fmt::format("system prompt length (default {})", d.system_tokens.to_string())},
      {"message-tokens", "DIST",
       fmt::format("user message length (default {})", d.message_tokens.to_string())},
      {"answer-tokens", "DIST",
       fmt::format("answer length (default {})", d.answer_tokens.to_string())},
      {"think-time", "DIST",
       fmt::format("seconds between a turn and the next (default {})", d.think_s.to_string())},
      {"rate", "R", fmt::format("conversations starting per second, Poisson (default {})", d.rate)},
      {"regenerate", "P",
       fmt::format("chance a turn is asked again, a branch (default {})", d.regenerate)},
      {"edit", "P",
       fmt::format("chance the user edits an earlier turn, a branch (default {})", d.edit)},
      {"agent-fraction", "F",
       fmt::format("fraction of conversations that are agent loops (default {})",
                   d.agent_fraction)},
      {"agent-steps", "DIST",
       fmt::format("tool steps per agent loop (default {})", d.agent_steps.to_string())},
      {"tool-tokens", "DIST",
       fmt::format("tool result length (default {})", d.tool_tokens.to_string())},
      {"tool-call-tokens", "DIST",
       fmt::format("agent answer (tool call) length (default {})", d.tool_call_tokens.to_string())},
      {"tool-time", "DIST",
       fmt::format("seconds a tool runs before the next step (default {})",
                   d.tool_time_s.to_string())},
      {"namespaces", "N",
       fmt::format("namespaces (tenants) conversations spread over (default {})", d.namespaces)},
      {"priorities", "LIST", "priorities conversations draw from, e.g. 10,35,90 (default 35)"},
      {"help", "", "show this help"},
  };
}

std::vector<int32_t> parse_priorities(const std::string& text) {
  std::vector<int32_t> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const uint64_t priority = parse_count(part, "--priorities");
    // Checked before the cast: 2^32 + 35 would otherwise wrap to a valid 35.
    if (priority > static_cast<uint64_t>(kMaxPriority)) {
      throw UsageError(fmt::format("--priorities: priority {} is outside [{}, {}]", part,
                                   kMinPriority, kMaxPriority));
    }
    out.push_back(static_cast<int32_t>(priority));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

int run_gen(std::span<const std::string> argv, std::ostream& out, std::ostream& err) {
  const Args args("gen", argv, gen_flags());
  if (args.has("help")) {
    out << args.help_text(
        "radixkv gen [flags] [--out PATH]",
        "Writes a synthetic multi-turn trace in the native format (docs/trace_format.md):\n"
        "chats with shared system prompts, branches, agent loops, namespaces and priorities.\n"
        "DIST is N, uniform:A:B, exp:MEAN or lognormal:MEAN:SIGMA. With no flags it writes the\n"
        "bundled default trace that `radixkv replay` uses when given no --trace.");
    return kExitOk;
  }
  GenConfig config;
  auto count = [&](const char* flag, uint64_t& field) {
    if (auto v = args.get(flag)) field = parse_count(*v, fmt::format("--{}", flag));
  };
  auto real = [&](const char* flag, double& field, double min, double max) {
    if (auto v = args.get(flag)) field = parse_real(*v, fmt::format("--{}", flag), min, max);
  };
  auto dist = [&](const char* flag, Distribution& field) {
    if (auto v = args.get(flag)) field = Distribution::parse(*v, fmt::format("--{}", flag));
  };
  count("seed", config.seed);
  count("conversations", config.conversations);
  count("system-prompts", config.system_prompts);
  count("namespaces", config.namespaces);
  real("zipf", config.zipf, 0, 10);
  real("rate", config.rate, 1e-9, 1e9);
  real("regenerate", config.regenerate, 0, 1);
  real("edit", config.edit, 0, 1);
  real("agent-fraction", config.agent_fraction, 0, 1);
  dist("turns", config.turns);
  dist("system-tokens", config.system_tokens);
  dist("message-tokens", config.message_tokens);
  dist("answer-tokens", config.answer_tokens);
  dist("think-time", config.think_s);
  dist("agent-steps", config.agent_steps);
  dist("tool-tokens", config.tool_tokens);
  dist("tool-call-tokens", config.tool_call_tokens);
  dist("tool-time", config.tool_time_s);
  if (auto v = args.get("priorities")) config.priorities = parse_priorities(*v);
  if (config.conversations > 10'000'000) {
    throw UsageError(
        "--conversations: more than 1e7 conversations is beyond what gen holds in memory");
  }

  const std::string text = generate_native(config);
  if (auto path = args.get("out")) {
    std::ofstream file(*path, std::ios::binary | std::ios::trunc);
    if (!file) throw UsageError(fmt::format("--out: cannot open '{}' for writing", *path));
    file << text;
    file.close();
    if (!file) {
      err << fmt::format("radixkv gen: error: writing '{}' failed\n", *path);
      return kExitFailure;
    }
  } else {
    out << text;
  }
  return kExitOk;
}

}  // namespace radixkv::tools
