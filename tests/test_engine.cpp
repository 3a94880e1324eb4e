// Engine-mode replay: a two-turn trace worked out by hand (the answer cached at finish is hit by
// the next turn; TTFT from the cost model), generated traces under every schedule with and
// without the cache, a tight pool that forces preemption, a pool too small for one request, and
// the JSON report's keys.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tools/cli/cli.h"
#include "tools/replay/engine_replay.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

const KvLayout kTinyLayout{1, 1, 4, 2, 16};

// Turn 0: 64 prompt tokens at t = 0, 32 answer tokens. Turn 1 at t = 1000: turn 0's prompt and
// answer, then 16 new tokens (112 in all), 8 answer tokens.
Trace two_turns() {
  Trace trace;
  trace.source = "two turns";
  TraceBuilder builder(trace);
  TraceRequest first;
  first.output_tokens = 32;
  const Segment opening{content_key(ContentDomain::kNative, 0, 1), 64};
  builder.add(first, {&opening, 1});
  TraceRequest second;
  second.id = 1;
  second.arrival_s = 1000;
  second.parent = 0;
  second.output_tokens = 8;
  const Segment message{content_key(ContentDomain::kNative, 0, 2), 16};
  builder.add(second, {&message, 1});
  return trace;
}

EngineReplayConfig tiny_config(uint64_t pool_pages, std::string schedule = "lpm") {
  EngineReplayConfig config;
  config.layout = kTinyLayout;
  config.model = "tiny";
  config.pool_pages = pool_pages;
  config.schedule = std::move(schedule);
  return config;
}

Trace small_generated(uint64_t seed, uint64_t conversations) {
  GenConfig gen;
  gen.seed = seed;
  gen.conversations = conversations;
  gen.rate = 4;
  gen.namespaces = 2;
  gen.priorities = {10, 35, 90};
  gen.system_tokens = Distribution::parse("lognormal:600:0.5", "--system-tokens");
  gen.answer_tokens = Distribution::parse("lognormal:80:0.6", "--answer-tokens");
  gen.tool_tokens = Distribution::parse("lognormal:200:1.0", "--tool-tokens");
  gen.agent_steps = Distribution::parse("uniform:2:8", "--agent-steps");
  return parse_native(generate_native(gen), "generated");
}

uint64_t largest_request_pages(const Trace& trace, uint32_t page_tokens) {
  uint64_t most = 0;
  for (const TraceRequest& r : trace.requests) {
    most = std::max(most, Scheduler::pages_needed(r.input_tokens, r.output_tokens, page_tokens));
  }
  return most;
}

struct CliRun {
  int status;
  std::string out, err;
};

CliRun cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int status = run_cli(args, out, err);
  return {status, out.str(), err.str()};
}

}  // namespace

TEST_CASE("engine: a turn's answer, cached at finish, is hit by the next turn (TTFT by hand)") {
  // P = 16. Turn 0 finishes with its prompt and 31 fed answer tokens (95 tokens, 5 full pages)
  // cached. Turn 1's 112-token prompt is matched up to floor(111/16)*16 = 96 tokens: 80 hit.
  // Cost: 0.01 s a step + 0.001 s per prefill token. Turn 0: 64 tokens, TTFT 0.074 s; then 31
  // decode steps of 0.01 s (done at 0.384 s). Turn 1 arrives at 1000 on an idle engine: 32
  // tokens, TTFT 0.042 s, then 7 decode steps: the last finish at 1000.112 s.
  EngineReplayConfig config = tiny_config(64);
  config.cost = {0.001, 0.01, 0.0};
  const ReplayResult r = replay_engine(two_turns(), config);
  CHECK(r.ok());
  CHECK(r.hit_tokens == 80);
  CHECK(r.input_tokens == 64 + 112);
  const EngineRun& run = r.engine.run;
  CHECK(run.finished == 2);
  CHECK(run.output_tokens == 40);
  CHECK(run.prefill_tokens == 64 + 32);
  CHECK(run.ttft_p50_s == doctest::Approx(0.042));
  CHECK(run.ttft_p99_s == doctest::Approx(0.074));
  CHECK(run.simulated_seconds == doctest::Approx(1000.112));
  // Without the cache turn 1 computes all 112 tokens: TTFT 0.122 s.
  REQUIRE(r.engine.no_cache.has_value());
  const EngineRun& plain = *r.engine.no_cache;
  CHECK(plain.hit_tokens == 0);
  CHECK(plain.prefill_tokens == 64 + 112);
  CHECK(plain.ttft_p50_s == doctest::Approx(0.074));
  CHECK(plain.ttft_p99_s == doctest::Approx(0.122));
}

TEST_CASE("engine: every schedule serves a generated trace with no leak, with and without cache") {
  const Trace trace = small_generated(7, 120);
  REQUIRE(trace.requests.size() > 300);
  for (const char* schedule : {"fcfs", "lpm", "share", "lpm-share"}) {
    CAPTURE(schedule);
    // Room for every request at once: no preemption, so each prompt token is hit or computed once.
    const ReplayResult r = replay_engine(trace, tiny_config(1u << 17, schedule));
    CHECK(r.ok());
    CHECK(r.pages_leaked == 0);
    const EngineRun& run = r.engine.run;
    CHECK(run.finished == trace.requests.size());
    CHECK(run.output_tokens == trace.output_tokens());
    CHECK(run.preemptions == 0);
    CHECK(run.hit_tokens > 0);
    CHECK(run.prefill_tokens + run.hit_tokens == trace.input_tokens());
    REQUIRE(r.engine.no_cache.has_value());
    CHECK(r.engine.no_cache->hit_tokens == 0);
    CHECK(r.engine.no_cache->prefill_tokens == trace.input_tokens());
    CHECK(r.engine.no_cache->finished == trace.requests.size());
    CHECK(run.prefill_tokens < r.engine.no_cache->prefill_tokens);
  }
}

TEST_CASE(
    "engine: a tight pool forces preemptions, and every request still completes with no leak") {
  const Trace trace = small_generated(11, 150);
  const uint64_t largest = largest_request_pages(trace, kTinyLayout.page_tokens);
  for (const char* schedule : {"fcfs", "lpm-share"}) {
    CAPTURE(schedule);
    EngineReplayConfig config = tiny_config(largest + largest / 2, schedule);
    config.scheduler.max_running = 32;
    const ReplayResult r = replay_engine(trace, config);
    CHECK(r.ok());
    CHECK(r.accounting_error.empty());
    CHECK(r.engine.run.preemptions > 0);
    CHECK(r.engine.run.finished == trace.requests.size());
    CHECK(r.engine.run.readmitted == r.engine.run.preemptions);
    REQUIRE(r.engine.no_cache.has_value());
    CHECK(r.engine.no_cache->finished == trace.requests.size());
  }
}

TEST_CASE("engine: a pool too small for one request is a clear error naming the pool's flag") {
  const Trace trace = two_turns();
  // Turn 1 holds at most 112 + 8 - 1 = 119 tokens: 8 pages of 16.
  CHECK_THROWS_WITH_AS(replay_engine(trace, tiny_config(7)),
                       doctest::Contains("too small for request 1 (id 1): its 112 prompt and 8 "
                                         "answer tokens need 8 pages"),
                       PoolTooSmall);
  CHECK(replay_engine(trace, tiny_config(8)).ok());

  // Through the command line (llama-3-8b: a 16-token page is 2 MiB, 64 MiB hold 512 tokens).
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--pool-bytes", "64MiB"}, {"--cache-bytes", "64MiB"}, {"--capacity-tokens", "512"}}) {
    CAPTURE(flag);
    const CliRun run = cli({"replay", "--mode", "engine", flag, value});
    CHECK(run.status == kExitUsage);
    CHECK(run.err.find(flag + ": the KV pool holds 32 pages") != std::string::npos);
    CHECK(run.err.find("give a larger pool") != std::string::npos);
  }
}

TEST_CASE("engine: bad engine flags and engine flags in cache mode exit 2 naming the flag") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"replay", "--schedule", "lpm"}, "--schedule: engine mode only"},
      {{"replay", "--no-cache"}, "--no-cache: engine mode only"},
      {{"replay", "--mode", "engine", "--schedule", "lifo"}, "--schedule: unknown schedule"},
      {{"replay", "--mode", "engine", "--max-running", "0"}, "--max-running"},
      {{"replay", "--mode", "engine", "--chunk-tokens", "many"}, "--chunk-tokens"},
      {{"replay", "--mode", "engine", "--prefill-s-per-token", "-1"}, "--prefill-s-per-token"},
      {{"replay", "--mode", "engine", "--pool-bytes", "8GiB", "--cache-bytes", "8GiB"},
       "--pool-bytes"},
      {{"replay", "--mode", "engine", "--policy", "belady"}, "cache mode only"},
  };
  for (const auto& [args, message] : cases) {
    CAPTURE(message);
    const CliRun run = cli(args);
    CHECK(run.status == kExitUsage);
    CHECK(run.err.find(message) != std::string::npos);
  }
}

TEST_CASE("engine: --json carries the issue's keys, and the no-cache run beside them") {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("radixkv_engine_test_" + std::to_string(::getpid()));
  {
    GenConfig gen;
    gen.conversations = 30;
    std::ofstream(path) << generate_native(gen);
  }
  const CliRun run = cli({"replay", "--mode", "engine", "--trace", path.string(), "--json",
                          "--pool-bytes", "8GiB", "--schedule", "share"});
  std::filesystem::remove(path);
  REQUIRE(run.status == kExitOk);
  const nlohmann::json json = nlohmann::json::parse(run.out);
  for (const char* key : {"hit_rate", "requests", "pages_leaked", "preemptions", "ttft_p50_seconds",
                          "ttft_p99_seconds", "output_tokens_per_second"}) {
    CAPTURE(key);
    REQUIRE(json.contains(key));
    CHECK(json[key].is_number());
  }
  CHECK(json["mode"] == "engine");
  CHECK(json["schedule"] == "share");
  CHECK(json["pages_leaked"] == 0);
  CHECK(json["hit_rate"].get<double>() > 0);
  const nlohmann::json& plain = json["no_cache"];
  REQUIRE(plain.is_object());
  CHECK(plain["hit_rate"].get<double>() == 0);
  CHECK(plain["ttft_p99_seconds"].get<double>() >= json["ttft_p50_seconds"].get<double>());
}
