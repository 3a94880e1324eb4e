// `radixkv gen`: flags -> GenConfig -> native JSONL on stdout or in --out.
#include <fmt/format.h>

#include <fstream>
#include <ostream>

#include "tools/cli/cli.h"
#include "tools/cli/flags.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

constexpr const char* kDescription =
    "Writes a synthetic multi-turn trace in the native format (docs/trace_format.md):\n"
    "chats with shared system prompts, branches, agent loops with sub-agents, namespaces and\n"
    "priorities. --agents writes agent sessions only (the flags given still apply).\n"
    "DIST is N, uniform:A:B, exp:MEAN or lognormal:MEAN:SIGMA. With no flags it writes the\n"
    "bundled default trace that `radixkv replay` uses when given no --trace. It refuses a\n"
    "configuration whose trace `radixkv replay` could not read (a prompt too long, too many\n"
    "namespaces).";

// The flags' text, converted into GenConfig once parsed (distributions need their flag's name).
struct GenFlags {
  std::string out, turns, system_tokens, message_tokens, answer_tokens, think_time, agent_steps,
      tool_tokens, tool_call_tokens, tool_time, subagents, subagent_steps, priorities;
  bool agents = false;
};

void declare_gen_flags(CommandLine& cli, GenConfig& c, GenFlags& f) {
  const GenConfig d;
  cli.text("--out", f.out, "PATH", "write the trace here (- or no --out: standard output)");
  cli.count("--seed", c.seed, "N",
            fmt::format("random seed; equal seeds give identical bytes (default {})", d.seed));
  cli.count("--conversations", c.conversations, "N",
            fmt::format("conversations, chats and agent loops (default {})", d.conversations), 1,
            kMaxConversations);
  cli.text("--turns", f.turns, "DIST",
           fmt::format("turns per chat (default {})", d.turns.to_string()));
  cli.count("--system-prompts", c.system_prompts, "N",
            fmt::format("size of the shared system prompt pool (default {})", d.system_prompts), 1,
            kMaxSystemPrompts);
  cli.real(
      "--zipf", c.zipf, "S",
      fmt::format("Zipf exponent of system prompt popularity; 0 = uniform (default {})", d.zipf), 0,
      10);
  cli.text("--system-tokens", f.system_tokens, "DIST",
           fmt::format("system prompt length (default {})", d.system_tokens.to_string()));
  cli.text("--message-tokens", f.message_tokens, "DIST",
           fmt::format("user message length (default {})", d.message_tokens.to_string()));
  cli.text("--answer-tokens", f.answer_tokens, "DIST",
           fmt::format("answer length (default {})", d.answer_tokens.to_string()));
  cli.text("--think-time", f.think_time, "DIST",
           fmt::format("seconds between a turn and the next (default {})", d.think_s.to_string()));
  cli.real("--rate", c.rate, "R",
           fmt::format("conversations starting per second, Poisson (default {})", d.rate), 1e-9,
           1e9);
  cli.real("--regenerate", c.regenerate, "P",
           fmt::format("chance a turn is asked again, a branch (default {})", d.regenerate), 0, 1);
  cli.real("--edit", c.edit, "P",
           fmt::format("chance the user edits an earlier turn, a branch (default {})", d.edit), 0,
           1);
  cli.real(
      "--agent-fraction", c.agent_fraction, "F",
      fmt::format("fraction of conversations that are agent loops (default {})", d.agent_fraction),
      0, 1);
  cli.text("--agent-steps", f.agent_steps, "DIST",
           fmt::format("tool steps per agent loop (default {})", d.agent_steps.to_string()));
  cli.text("--tool-tokens", f.tool_tokens, "DIST",
           fmt::format("tool result length (default {})", d.tool_tokens.to_string()));
  cli.text(
      "--tool-call-tokens", f.tool_call_tokens, "DIST",
      fmt::format("agent answer (tool call) length (default {})", d.tool_call_tokens.to_string()));
  cli.text("--tool-time", f.tool_time, "DIST",
           fmt::format("seconds a tool runs before the next step (default {})",
                       d.tool_time_s.to_string()));
  cli.real("--subagent-chance", c.subagent_chance, "P",
           fmt::format("chance an agent step starts sub-agents instead of a tool (default {})",
                       d.subagent_chance),
           0, 1);
  cli.text(
      "--subagents", f.subagents, "DIST",
      fmt::format("sub-agents such a step starts at once (default {})", d.subagents.to_string()));
  cli.text("--subagent-steps", f.subagent_steps, "DIST",
           fmt::format("tool steps per sub-agent (default {})", d.subagent_steps.to_string()));
  const GenConfig a = agents_preset();
  cli.flag("--agents", f.agents,
           fmt::format("agent sessions only: --conversations {} --rate {} --agent-fraction 1 "
                       "--subagent-chance {} --tool-time {} unless given",
                       a.conversations, a.rate, a.subagent_chance, a.tool_time_s.to_string()));
  cli.count(
      "--namespaces", c.namespaces, "N",
      fmt::format("namespaces (tenants) conversations spread over (default {})", d.namespaces), 1,
      kMaxNamespaces);
  cli.text("--priorities", f.priorities, "LIST",
           "priorities conversations draw from, e.g. 10,35,90 (default 35)");
}

std::vector<int32_t> parse_priorities(const std::string& text) {
  std::vector<int32_t> out;
  for (const std::string& part : split_list(text)) {
    uint64_t priority = 0;
    try {
      priority = parse_count(part);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--priorities: {}", e.what()));
    }
    // Checked before the cast: 2^32 + 35 would otherwise wrap to a valid 35.
    if (priority > static_cast<uint64_t>(kMaxPriority)) {
      throw UsageError(fmt::format("--priorities: priority {} is outside [{}, {}]", part,
                                   kMinPriority, kMaxPriority));
    }
    out.push_back(static_cast<int32_t>(priority));
  }
  return out;
}

// --agents: the preset's values for the flags not given.
void apply_agents_preset(const CommandLine& cli, GenConfig& c) {
  const GenConfig preset = agents_preset();
  if (!cli.given("--conversations")) c.conversations = preset.conversations;
  if (!cli.given("--rate")) c.rate = preset.rate;
  if (!cli.given("--agent-fraction")) c.agent_fraction = preset.agent_fraction;
  if (!cli.given("--subagent-chance")) c.subagent_chance = preset.subagent_chance;
  if (!cli.given("--tool-time")) c.tool_time_s = preset.tool_time_s;
}

void apply_text_flags(const CommandLine& cli, const GenFlags& f, GenConfig& c) {
  const auto dist = [&](const char* flag, const std::string& text, Distribution& field) {
    if (cli.given(flag)) field = Distribution::parse(text, flag);
  };
  dist("--turns", f.turns, c.turns);
  dist("--system-tokens", f.system_tokens, c.system_tokens);
  dist("--message-tokens", f.message_tokens, c.message_tokens);
  dist("--answer-tokens", f.answer_tokens, c.answer_tokens);
  dist("--think-time", f.think_time, c.think_s);
  dist("--agent-steps", f.agent_steps, c.agent_steps);
  dist("--tool-tokens", f.tool_tokens, c.tool_tokens);
  dist("--tool-call-tokens", f.tool_call_tokens, c.tool_call_tokens);
  dist("--tool-time", f.tool_time, c.tool_time_s);
  dist("--subagents", f.subagents, c.subagents);
  dist("--subagent-steps", f.subagent_steps, c.subagent_steps);
  if (cli.given("--priorities")) c.priorities = parse_priorities(f.priorities);
}

}  // namespace

int run_gen(std::span<const std::string> argv, std::ostream& out, std::ostream& err) {
  GenConfig config;
  GenFlags f;
  CommandLine cli("gen", kDescription);
  declare_gen_flags(cli, config, f);
  if (!cli.parse(argv, out)) return kExitOk;  // --help
  if (f.agents) apply_agents_preset(cli, config);
  apply_text_flags(cli, f, config);
  config.validate();
  if (!cli.given("--out") || f.out == "-") {
    write_native(config, out);
    return kExitOk;
  }
  std::ofstream file(f.out, std::ios::binary | std::ios::trunc);
  if (!file) throw UsageError(fmt::format("--out: cannot open '{}' for writing", f.out));
  write_native(config, file);
  file.close();
  if (!file) {
    err << fmt::format("radixkv gen: error: writing '{}' failed\n", f.out);
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace radixkv::tools
