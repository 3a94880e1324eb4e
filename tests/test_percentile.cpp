// The percentile definition (tools/replay/percentile.h, nearest rank) on lists worked out by hand,
// and the two reports that use it: LatencyRecorder's call latencies and the engine's TTFT.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "tools/replay/engine_replay.h"
#include "tools/replay/latency.h"
#include "tools/replay/percentile.h"

using namespace radixkv;
using namespace radixkv::tools;

TEST_CASE("percentile: nearest rank, ceil(p * n / 100), on hand-computed lists") {
  struct Case {
    std::size_t n;
    uint32_t percent;
    std::size_t rank;
  };
  // p * n / 100 in the comments: the rank is its ceiling.
  const std::vector<Case> cases = {
      {1, 1, 1},       // 0.01
      {1, 100, 1},     // 1
      {2, 50, 1},      // 1
      {2, 51, 2},      // 1.02
      {3, 33, 1},      // 0.99
      {3, 50, 2},      // 1.5
      {7, 14, 1},      // 0.98
      {7, 15, 2},      // 1.05
      {7, 50, 4},      // 3.5
      {7, 90, 7},      // 6.3
      {10, 50, 5},     // 5
      {10, 90, 9},     // 9
      {10, 99, 10},    // 9.9
      {100, 7, 7},     // 7 (where 0.07 * 100 in floating point rounds up to 7.000000000000001)
      {100, 99, 99},   // 99
      {200, 99, 198},  // 198
      {201, 99, 199},  // 198.99
  };
  for (const Case& c : cases) {
    CAPTURE(c.n);
    CAPTURE(c.percent);
    CHECK(nearest_rank(c.n, c.percent) == c.rank);
  }
  // The values, not only the ranks: 10 samples given out of order.
  std::vector<double> sorted = {7.5, 1.5, 9.5, 3.5, 10.5, 2.5, 8.5, 4.5, 6.5, 5.5};
  std::sort(sorted.begin(), sorted.end());
  CHECK(percentile(sorted, 50) == 5.5);
  CHECK(percentile(sorted, 90) == 9.5);
  CHECK(percentile(sorted, 99) == 10.5);
  CHECK(percentile(std::vector<double>{}, 50) == 0.0);
}

TEST_CASE("percentile: LatencyRecorder summarises call latencies by nearest rank") {
  // 1..20 microseconds, recorded shuffled: p50 = 10th = 10, p90 = 18th = 18, p99 = 20th = 20.
  std::vector<uint64_t> ns;
  for (uint64_t us = 1; us <= 20; ++us) ns.push_back(us * 1000);
  std::shuffle(ns.begin(), ns.end(), std::mt19937(5));
  LatencyRecorder recorder;
  for (uint64_t sample : ns) recorder.add_ns(sample);
  const LatencySummary s = recorder.summary();
  CHECK(s.count == 20);
  CHECK(s.p50_us == 10.0);
  CHECK(s.p90_us == 18.0);
  CHECK(s.p99_us == 20.0);
  CHECK(s.max_us == 20.0);
  CHECK(s.mean_us == doctest::Approx(10.5));
  CHECK(LatencyRecorder().summary().p99_us == 0.0);
}

TEST_CASE("percentile: the engine's TTFT percentiles by nearest rank, worked out by hand") {
  // Ten single-turn requests, each on an idle engine (1000 s apart), with 16 * (k + 1) prompt
  // tokens for k = 0..9 in a shuffled order, nothing shared. Each prompt is one step of
  // 0.01 s + 0.001 s per token, so TTFT_k = 0.026 + 0.016 k: p50 is the 5th smallest (k = 4,
  // 0.09 s), p90 the 9th (k = 8, 0.154 s), p99 the 10th (k = 9, 0.17 s).
  const std::vector<uint32_t> ks = {3, 9, 0, 6, 2, 8, 5, 1, 7, 4};
  Trace trace;
  trace.source = "ten requests";
  TraceBuilder builder(trace);
  for (std::size_t i = 0; i < ks.size(); ++i) {
    TraceRequest r;
    r.id = i;
    r.arrival_s = 1000.0 * static_cast<double>(i);
    r.output_tokens = 1;
    const Segment prompt{content_key(ContentDomain::kNative, 0, 100 + i), 16 * (ks[i] + 1)};
    builder.add(r, {&prompt, 1});
  }
  EngineReplayConfig config;
  config.layout = KvLayout{1, 1, 4, 2, 16};
  config.model = "tiny";
  config.pool_pages = 64;
  config.cost = {0.001, 0.01, 0.0};
  config.compare_no_cache = false;
  const ReplayResult r = replay_engine(trace, config);
  REQUIRE(r.ok());
  CHECK(r.hit_tokens == 0);
  CHECK(r.engine.run.ttft_p50_s == doctest::Approx(0.09));
  CHECK(r.engine.run.ttft_p90_s == doctest::Approx(0.154));
  CHECK(r.engine.run.ttft_p99_s == doctest::Approx(0.17));
  CHECK(r.engine.run.ttft_max_s == doctest::Approx(0.17));
  CHECK(r.engine.run.ttft_mean_s == doctest::Approx(0.026 + 0.016 * 4.5));
}
