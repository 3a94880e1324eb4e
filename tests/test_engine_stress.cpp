// Stress (issue 8): an engine-mode replay of over a million generated requests through a tight
// pool (about 1,000 pages while prompts reach several thousand tokens), with priorities reaching
// the priority eviction policy. At the end: every request finished, zero leaked pages, and the
// accounting identity and tree.verify() held (ReplayResult::accounting_error is their verdict).
// Labelled slow: about half a minute in a Release build on a shared 2-core machine.
#include <doctest/doctest.h>

#include "tools/replay/engine_replay.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;

TEST_CASE("stress: a million-request engine replay through a tight pool leaks nothing") {
  GenConfig gen;
  gen.seed = 2026;
  gen.conversations = 210'000;
  gen.rate = 20;  // faster than the engine serves: the queue stays full, memory stays tight
  gen.namespaces = 4;
  gen.priorities = {10, 35, 90};
  gen.system_tokens = Distribution::parse("lognormal:600:0.5", "--system-tokens");
  gen.answer_tokens = Distribution::parse("lognormal:80:0.6", "--answer-tokens");
  gen.tool_tokens = Distribution::parse("lognormal:200:1.0", "--tool-tokens");
  gen.agent_steps = Distribution::parse("uniform:2:8", "--agent-steps");
  const Trace trace = parse_native(generate_native(gen), "stress");
  REQUIRE(trace.requests.size() >= 1'000'000);

  EngineReplayConfig config;
  config.layout = KvLayout{1, 1, 4, 2, 16};
  config.model = "tiny";
  config.pool_pages = 1024;
  config.policy = "priority";
  config.schedule = "lpm-share";
  config.scheduler.max_running = 64;
  config.compare_no_cache = false;
  const ReplayResult r = replay_engine(trace, config);
  CHECK(r.accounting_error == "");
  CHECK(r.pages_leaked == 0);
  CHECK(r.engine.run.finished == trace.requests.size());
  CHECK(r.engine.run.rejected == 0);
  CHECK(r.engine.run.preemptions > 0);
  CHECK(r.engine.run.output_tokens == trace.output_tokens());
  CHECK(r.hit_tokens > 0);
  MESSAGE("stress: ", r.requests, " requests, ", r.engine.run.preemptions, " preemptions, ",
          r.engine.run.steps, " steps, hit rate ", r.hit_rate(), ", wall ", r.wall_seconds, " s");
}
