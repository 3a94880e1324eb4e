// `radixkv gen`: determinism, and that each feature shows up in the trace it writes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"
#include "tools/trace/units.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

GenConfig small_config(uint64_t seed) {
  GenConfig config;
  config.seed = seed;
  config.conversations = 40;
  return config;
}

std::vector<TokenId> expand(const Trace& trace, std::size_t i) {
  TokenExpander expander(trace);
  const auto tokens = expander.expand(i);
  return {tokens.begin(), tokens.end()};
}

bool is_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

TEST_CASE("gen: the same seed gives the same bytes, another seed other bytes") {
  const std::string a = generate_native(small_config(7));
  CHECK(a == generate_native(small_config(7)));
  CHECK(a != generate_native(small_config(8)));
  CHECK(generate_native(GenConfig{}) == generate_native(GenConfig{}));
}

TEST_CASE("gen: output reads back as a native trace in arrival order") {
  const Trace trace = parse_native(generate_native(small_config(3)), "gen");
  REQUIRE(trace.requests.size() >= 40);
  CHECK(trace.skipped_records == 0);
  for (std::size_t i = 1; i < trace.requests.size(); ++i) {
    CHECK(trace.requests[i - 1].arrival_s <= trace.requests[i].arrival_s);
  }
  for (const TraceRequest& r : trace.requests) {
    if (r.parent != kNoParent) CHECK(trace.requests[r.parent].arrival_s < r.arrival_s);
  }
}

TEST_CASE("gen: multi-turn chats continue the previous prompt and answer") {
  GenConfig config = small_config(5);
  config.agent_fraction = 0;
  config.regenerate = 0;
  config.edit = 0;
  config.turns = Distribution::fixed(4);
  const Trace trace = parse_native(generate_native(config), "gen");
  CHECK(trace.requests.size() == 40 * 4);
  std::size_t children = 0;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const TraceRequest& r = trace.requests[i];
    if (r.parent == kNoParent) continue;
    ++children;
    const TraceRequest& p = trace.requests[r.parent];
    CHECK(r.input_tokens > p.input_tokens + p.output_tokens);
    CHECK(is_prefix(expand(trace, r.parent), expand(trace, i)));
  }
  CHECK(children == 40 * 3);
}

TEST_CASE("gen: system prompts are shared, more popular ones more often") {
  GenConfig config = small_config(9);
  config.conversations = 400;
  config.turns = Distribution::fixed(1);
  config.agent_fraction = 0;
  config.system_prompts = 8;
  config.zipf = 1.2;
  config.system_tokens = Distribution::fixed(64);
  const Trace trace = parse_native(generate_native(config), "gen");
  // Each prompt starts with one of the 8 system prompts: count first tokens.
  std::map<TokenId, int> uses;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) ++uses[expand(trace, i)[0]];
  CHECK(uses.size() <= 8);
  CHECK(uses.size() >= 4);
  int most = 0;
  for (const auto& [token, n] : uses) most = std::max(most, n);
  CHECK(most > 400 / 8 * 2);  // Zipf 1.2 over 8: the top prompt gets ~40 %, far above 1/8
}

TEST_CASE("gen: branches (regenerate and edit) share history with an earlier turn") {
  GenConfig config = small_config(11);
  config.agent_fraction = 0;
  config.turns = Distribution::fixed(6);
  config.regenerate = 0.3;
  config.edit = 0.3;
  const Trace trace = parse_native(generate_native(config), "gen");
  const std::string text = generate_native(config);
  CHECK(text.find("\"kind\":\"regen\"") != std::string::npos);
  CHECK(text.find("\"kind\":\"edit\"") != std::string::npos);
  // Two requests with the same parent are branches; a regenerate has an identical prompt.
  std::map<uint32_t, std::vector<std::size_t>> by_parent;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    if (trace.requests[i].parent != kNoParent) by_parent[trace.requests[i].parent].push_back(i);
  }
  std::size_t identical = 0, branched = 0;
  for (const auto& [parent, kids] : by_parent) {
    for (std::size_t k = 1; k < kids.size(); ++k) {
      ++branched;
      if (expand(trace, kids[0]) == expand(trace, kids[k])) ++identical;
    }
  }
  CHECK(branched > 0);
  CHECK(identical > 0);
  CHECK(identical < branched);
}

TEST_CASE("gen: agent loops grow one context by tool results") {
  GenConfig config = small_config(13);
  config.conversations = 5;
  config.agent_fraction = 1;
  config.agent_steps = Distribution::fixed(10);
  const Trace trace = parse_native(generate_native(config), "gen");
  CHECK(trace.requests.size() == 5 * 11);
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const TraceRequest& r = trace.requests[i];
    if (r.parent == kNoParent) continue;
    CHECK(r.num_segments == 1);
    CHECK(is_prefix(expand(trace, r.parent), expand(trace, i)));
  }
}

TEST_CASE("gen: namespaces and priorities are drawn from the configured sets") {
  GenConfig config = small_config(17);
  config.namespaces = 3;
  config.priorities = {10, 90};
  const Trace trace = parse_native(generate_native(config), "gen");
  std::set<uint64_t> namespaces;
  std::set<int32_t> priorities;
  for (const TraceRequest& r : trace.requests) {
    namespaces.insert(r.ns);
    priorities.insert(r.priority);
  }
  CHECK(namespaces == std::set<uint64_t>{0, 1, 2});
  CHECK(priorities == std::set<int32_t>{10, 90});
}

TEST_CASE("gen: impossible settings name their flag") {
  GenConfig config;
  config.rate = 0;
  CHECK_THROWS_WITH_AS(config.validate(), doctest::Contains("--rate"), UsageError);
  config = GenConfig{};
  config.priorities = {101};
  CHECK_THROWS_WITH_AS(config.validate(), doctest::Contains("--priorities"), UsageError);
  CHECK_THROWS_WITH_AS(Distribution::parse("uniform:5:1", "--turns"), doctest::Contains("--turns"),
                       UsageError);
  CHECK_THROWS_WITH_AS(Distribution::parse("gauss:1", "--answer-tokens"),
                       doctest::Contains("--answer-tokens"), UsageError);
}

TEST_CASE("gen: the trace built directly is the one its text reads back as, field for field") {
  // The built-in trace of `radixkv replay`, and configurations that use every field: branches,
  // agents, several namespaces and priorities, a fast rate (times crowded on the ms grid).
  std::vector<GenConfig> configs = {GenConfig{}, small_config(11)};
  GenConfig varied = small_config(12);
  varied.conversations = 300;
  varied.namespaces = 5;
  varied.priorities = {0, 7, 100};
  varied.regenerate = 0.3;
  varied.edit = 0.3;
  varied.agent_fraction = 0.5;
  varied.subagent_chance = 0.3;
  varied.rate = 500;
  configs.push_back(varied);
  for (const GenConfig& config : configs) {
    CAPTURE(config.seed);
    const Trace read = parse_native(generate_native(config), "gen");
    const Trace built = generate_trace(config, "gen");
    CHECK(built.source == read.source);
    CHECK(built.format == read.format);
    CHECK(built.skipped_records == read.skipped_records);
    CHECK(built.class_names == read.class_names);
    CHECK(built.namespace_names == read.namespace_names);
    CHECK(built.sessions == read.sessions);
    REQUIRE(built.requests.size() == read.requests.size());
    for (std::size_t i = 0; i < read.requests.size(); ++i) {
      CAPTURE(i);
      const TraceRequest& a = built.requests[i];
      const TraceRequest& b = read.requests[i];
      CHECK(a.id == b.id);
      CHECK(a.arrival_s == b.arrival_s);  // exactly: the double "%.3f" reads back as
      CHECK(a.ns == b.ns);
      CHECK(a.input_tokens == b.input_tokens);
      CHECK(a.output_tokens == b.output_tokens);
      CHECK(a.parent == b.parent);
      CHECK(a.first_segment == b.first_segment);
      CHECK(a.num_segments == b.num_segments);
      CHECK(a.priority == b.priority);
      CHECK(a.request_class == b.request_class);
      CHECK(a.session == b.session);
      CHECK(a.agent == b.agent);
    }
    REQUIRE(built.segments.size() == read.segments.size());
    for (std::size_t s = 0; s < read.segments.size(); ++s) {
      CAPTURE(s);
      CHECK(built.segments[s].key == read.segments[s].key);
      CHECK(built.segments[s].length == read.segments[s].length);
    }
  }
}

TEST_CASE("gen: the direct build refuses what write_native refuses") {
  GenConfig config = small_config(1);
  config.conversations = 0;
  CHECK_THROWS_AS(generate_trace(config, "gen"), UsageError);
  config = small_config(1);
  config.answer_tokens = Distribution::fixed(kMaxInputTokens + 1);
  CHECK_THROWS_AS(generate_trace(config, "gen"), UsageError);
}

namespace {

// Per session: the arrival of its first and of its last request.
std::vector<std::pair<double, double>> session_spans(const Trace& trace) {
  std::vector<std::pair<double, double>> spans(trace.sessions + 1, {1e300, -1e300});
  for (const TraceRequest& r : trace.requests) {
    auto& [first, last] = spans[r.session];
    first = std::min(first, r.arrival_s);
    last = std::max(last, r.arrival_s);
  }
  spans.erase(spans.begin());  // session 0: none
  return spans;
}

// The most sessions between their first and last request at one moment.
std::size_t peak_concurrent(const std::vector<std::pair<double, double>>& spans) {
  std::vector<std::pair<double, int>> events;
  for (const auto& [first, last] : spans) {
    events.push_back({first, +1});
    events.push_back({last, -1});
  }
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  std::size_t now = 0, peak = 0;
  for (const auto& [t, step] : events) {
    now += step;
    peak = std::max(peak, now);
  }
  return peak;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

TEST_CASE("gen --agents: over 100 sessions at once, growing contexts, sub-agents on its clock") {
  const GenConfig config = agents_preset();
  const Trace trace = generate_trace(config, "agents");
  // Every conversation is one session, numbered as it first arrives.
  CHECK(trace.sessions == config.conversations);
  const std::size_t peak = peak_concurrent(session_spans(trace));
  CHECK(peak >= 100);
  MESSAGE(trace.requests.size(), " requests, ", trace.sessions, " sessions, at most ", peak,
          " at once");
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> agents;  // (session, agent)
  for (uint32_t i = 0; i < trace.requests.size(); ++i) {
    const TraceRequest& r = trace.requests[i];
    REQUIRE(r.session >= 1);
    agents[{r.session, r.agent}].push_back(i);
    if (r.parent == kNoParent) continue;
    // A context only grows, within its own agent.
    const TraceRequest& parent = trace.requests[r.parent];
    CHECK(parent.session == r.session);
    CHECK(parent.agent == r.agent);
    CHECK(r.input_tokens > parent.input_tokens + parent.output_tokens);
  }
  uint64_t main_steps = 0, subagents = 0;
  for (const auto& [key, requests] : agents) {
    const auto [session, agent] = key;
    // Each agent is one chain: a first request, then steps each continuing the one before.
    CHECK(trace.requests[requests.front()].parent == kNoParent);
    for (std::size_t k = 1; k < requests.size(); ++k) {
      CHECK(trace.requests[requests[k]].parent == requests[k - 1]);
    }
    if (agent == 0) {
      main_steps += requests.size() - 1;
      continue;
    }
    ++subagents;
    // Sub-agents are numbered 1, 2, ... as they start.
    CHECK(agents.count({session, agent - 1}) == 1);
    const auto& main = agents.at({session, 0});
    const TraceRequest& first = trace.requests[requests.front()];
    // It opens with its agent's system prompt, and its agent waits for it: no request of the main
    // agent arrives while it runs.
    CHECK(trace.segments[first.first_segment].key ==
          trace.segments[trace.requests[main.front()].first_segment].key);
    const double start = first.arrival_s, end = trace.requests[requests.back()].arrival_s;
    for (uint32_t m : main) {
      CHECK_FALSE((trace.requests[m].arrival_s > start && trace.requests[m].arrival_s <= end));
    }
  }
  // A main step starts sub-agents with probability 0.15, uniform:1:3 of them (mean 2).
  CHECK(subagents == doctest::Approx(0.15 * 2 * double(main_steps)).epsilon(0.1));
}

TEST_CASE("gen: tool times follow the stated distribution") {
  GenConfig config = agents_preset();
  config.subagent_chance = 0;  // every step then waits one tool time
  const Trace trace = generate_trace(config, "agents");
  std::vector<double> gaps;
  for (const TraceRequest& r : trace.requests) {
    if (r.parent != kNoParent) gaps.push_back(r.arrival_s - trace.requests[r.parent].arrival_s);
  }
  REQUIRE(gaps.size() > 3000);
  // lognormal:6:1.0: mean 6 s, median 6 * exp(-1/2) = 3.64 s (an exponential of mean 6 would
  // have a median of 4.16 s). Times are on the millisecond grid.
  double sum = 0;
  for (double g : gaps) sum += g;
  CHECK(sum / double(gaps.size()) == doctest::Approx(6.0).epsilon(0.06));
  CHECK(median(gaps) == doctest::Approx(6.0 * std::exp(-0.5)).epsilon(0.05));
  // The flag's text states it.
  CHECK(config.tool_time_s.to_string() == "lognormal:6:1");
}
