// Cluster mode (tools/replay/cluster_replay.h): the routing rules against a reference model written
// here, every decision of a whole replay against the same model, one worker against engine mode,
// and the claim on a generated multi-turn trace: prefix routing keeps >= 90 % of the hit
// rate of one worker with N times the capacity, and beats round-robin in hit rate and TTFT p99.
// Predicted against delivered hits: a hand-built trace worked out by hand at three event delays,
// exactness with fresh events when requests do not overlap in time, a wider gap with delayed
// events, the sums' agreement, and bad --event-delay values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "router/overlap_gap.h"
#include "tests/cli_runs.h"
#include "tools/replay/cluster_replay.h"
#include "tools/replay/engine_replay.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

constexpr RoutePolicy kPolicies[] = {RoutePolicy::kRoundRobin, RoutePolicy::kLeastLoaded,
                                     RoutePolicy::kPrefix, RoutePolicy::kPrefixLoad};

// The rules of cluster_routing.h, written out the slow way: every worker compared with every
// other by the whole ordering.
uint32_t model_choice(RoutePolicy policy, uint64_t k, const std::vector<uint32_t>& overlaps,
                      const std::vector<double>& loads, double blocks, double weight) {
  const uint32_t n = static_cast<uint32_t>(loads.size());
  const auto beats = [&](uint32_t a, uint32_t b) {  // does a come before b?
    switch (policy) {
      case RoutePolicy::kRoundRobin:
        return false;
      case RoutePolicy::kLeastLoaded:
        return loads[a] < loads[b] || (loads[a] == loads[b] && a < b);
      case RoutePolicy::kPrefix:
        if (overlaps[a] != overlaps[b]) return overlaps[a] > overlaps[b];
        return loads[a] < loads[b] || (loads[a] == loads[b] && a < b);
      case RoutePolicy::kPrefixLoad: {
        const auto score = [&](uint32_t w) {
          return weight * std::max(blocks - overlaps[w], 0.0) + loads[w] + blocks;
        };
        if (score(a) != score(b)) return score(a) < score(b);
        if (loads[a] != loads[b]) return loads[a] < loads[b];
        if (overlaps[a] != overlaps[b]) return overlaps[a] > overlaps[b];
        return a < b;
      }
    }
    return false;
  };
  if (policy == RoutePolicy::kRoundRobin) return static_cast<uint32_t>(k % n);
  for (uint32_t w = 0; w < n; ++w) {
    bool best = true;
    for (uint32_t other = 0; other < n; ++other) {
      if (other != w && beats(other, w)) best = false;
    }
    if (best) return w;
  }
  FAIL("the model's order has no first worker");
  return 0;
}

const Trace& generated_trace() {
  static const Trace trace = parse_native(generate_native(GenConfig{}), "generated");
  return trace;
}

ClusterReplayConfig cluster(uint32_t workers, RoutePolicy route, uint64_t pool_pages) {
  ClusterReplayConfig config;
  config.engine.layout = KvLayout::preset("llama-3-8b", 16);
  config.engine.model = "llama-3-8b";
  config.engine.pool_pages = pool_pages;
  config.workers = workers;
  config.route = route;
  return config;
}

// Each `radixkv replay ARGS` is refused with exit status 2 and an error containing its message.
void expect_refused(std::span<const std::pair<std::vector<std::string>, std::string>> bad) {
  for (const auto& [args, message] : bad) {
    CAPTURE(message);
    std::vector<std::string> argv = {"replay"};
    argv.insert(argv.end(), args.begin(), args.end());
    const testing::CliRun refused = testing::run_cli(argv);
    CHECK(refused.status == 2);
    CHECK_MESSAGE(refused.err.find(message) != std::string::npos, refused.err);
  }
}

}  // namespace

TEST_CASE("cluster routing: every policy against the reference model, ties included") {
  std::mt19937_64 rng(41);
  for (RoutePolicy policy : kPolicies) {
    CAPTURE(to_string(policy));
    for (uint32_t workers : {1u, 2u, 3u, 5u}) {
      const double weight = (rng() % 5) * 0.5;
      ClusterRouter router(policy, workers, {weight});
      for (uint64_t k = 0; k < 3000; ++k) {
        // Few distinct values, so that ties are common.
        std::vector<uint32_t> overlaps(workers);
        std::vector<double> loads(workers);
        for (uint32_t w = 0; w < workers; ++w) {
          overlaps[w] = static_cast<uint32_t>(rng() % 4);
          loads[w] = static_cast<double>(rng() % 4) * 1.5;
        }
        const double blocks = static_cast<double>(rng() % 7) + (rng() % 2 ? 0.5 : 0.0);
        REQUIRE(router.choose(overlaps, loads, blocks) ==
                model_choice(policy, k, overlaps, loads, blocks, weight));
      }
    }
  }
  CHECK(parse_route_policy("prefix-load") == RoutePolicy::kPrefixLoad);
  CHECK_THROWS_WITH_AS(parse_route_policy("random"),
                       "unknown routing policy 'random' (known: round-robin, least-loaded, prefix, "
                       "prefix-load)",
                       std::invalid_argument);
  CHECK_THROWS_AS(ClusterRouter(RoutePolicy::kPrefix, 0), std::invalid_argument);
  ClusterRouter two(RoutePolicy::kPrefix, 2);
  CHECK_THROWS_AS(two.choose(std::vector<uint32_t>{1}, std::vector<double>{0, 0}, 1),
                  std::invalid_argument);
}

TEST_CASE("cluster replay: every decision of a replay is the model's on what the router saw") {
  GenConfig gen;
  gen.conversations = 120;
  gen.seed = 9;
  const Trace trace = parse_native(generate_native(gen), "generated");
  for (RoutePolicy policy : kPolicies) {
    CAPTURE(to_string(policy));
    ClusterReplayConfig config = cluster(3, policy, 2048);
    config.weights.overlap_score_weight = 2.0;
    std::vector<RouteRecord> records;
    config.on_route = [&](const RouteRecord& r) { records.push_back(r); };
    const ReplayResult result = replay_cluster(trace, config);
    REQUIRE(records.size() == trace.requests.size());
    uint64_t with_overlap = 0, routed_to_overlap = 0;
    std::vector<uint64_t> per_worker(3, 0);
    std::vector<double> routed_blocks(3, 0.0);  // an upper bound of each worker's load
    for (size_t k = 0; k < records.size(); ++k) {
      const RouteRecord& r = records[k];
      for (uint32_t w = 0; w < 3; ++w) {
        // A load counts only requests routed there, unfinished; none routed there yet: 0.
        CHECK(r.loads[w] <= routed_blocks[w] + 1e-6);
        if (per_worker[w] == 0) CHECK(r.loads[w] == 0);
      }
      REQUIRE(r.chosen == model_choice(policy, k, r.overlaps, r.loads, r.request_blocks, 2.0));
      CHECK(r.request_blocks == static_cast<double>(trace.requests[r.request].input_tokens) / 16.0);
      if (k > 0) CHECK(r.time >= records[k - 1].time);  // routed in arrival order
      for (double load : r.loads) CHECK(load >= -1e-6);
      with_overlap += *std::max_element(r.overlaps.begin(), r.overlaps.end()) > 0;
      routed_to_overlap += r.overlaps[r.chosen] > 0;
      ++per_worker[r.chosen];
      routed_blocks[r.chosen] += r.request_blocks;
    }
    CHECK(with_overlap > records.size() / 2);  // the index saw the workers' caches
    CHECK(result.cluster.routed_to_overlap == routed_to_overlap);
    CHECK(result.ok());
    CHECK(result.cluster.total.finished == trace.requests.size());
    for (uint32_t w = 0; w < 3; ++w) CHECK(result.cluster.per_worker[w].requests == per_worker[w]);
    if (policy == RoutePolicy::kRoundRobin) {
      const uint64_t n = records.size();
      CHECK(per_worker == std::vector<uint64_t>{(n + 2) / 3, (n + 1) / 3, n / 3});
    }
  }
}

TEST_CASE("cluster replay: one worker is engine mode, exactly") {
  GenConfig gen;
  gen.conversations = 150;
  const Trace trace = parse_native(generate_native(gen), "generated");
  const ClusterReplayConfig config = cluster(1, RoutePolicy::kPrefix, 3000);
  EngineReplayConfig engine = config.engine;
  engine.compare_no_cache = false;
  const ReplayResult one = replay_cluster(trace, config);
  const ReplayResult alone = replay_engine(trace, engine);
  CHECK(one.hit_tokens == alone.hit_tokens);
  CHECK(one.evicted_pages == alone.evicted_pages);
  CHECK(one.cluster.total.steps == alone.engine.run.steps);
  CHECK(one.cluster.total.preemptions == alone.engine.run.preemptions);
  CHECK(one.cluster.total.ttft_p50_s == alone.engine.run.ttft_p50_s);
  CHECK(one.cluster.total.ttft_p99_s == alone.engine.run.ttft_p99_s);
  CHECK(one.cluster.total.simulated_seconds == alone.engine.run.simulated_seconds);
  CHECK(one.cluster.load_imbalance == 1.0);
  CHECK(alone.evicted_pages > 0);  // the pool was under pressure: the comparison means something
}

TEST_CASE(
    "cluster replay: prefix routing keeps the hit rate of one big worker, round-robin does not") {
  constexpr uint32_t kWorkers = 4;
  constexpr uint64_t kPoolPages = 2048;  // 4 GiB of llama-3-8b KV per worker
  const Trace& trace = generated_trace();
  const ReplayResult big =
      replay_cluster(trace, cluster(1, RoutePolicy::kPrefix, kWorkers * kPoolPages));
  const ReplayResult prefix =
      replay_cluster(trace, cluster(kWorkers, RoutePolicy::kPrefix, kPoolPages));
  const ReplayResult round_robin =
      replay_cluster(trace, cluster(kWorkers, RoutePolicy::kRoundRobin, kPoolPages));
  MESSAGE("hit rate: one worker x4 " << big.hit_rate() << ", prefix " << prefix.hit_rate()
                                     << ", round-robin " << round_robin.hit_rate());
  MESSAGE("TTFT p99: prefix " << prefix.cluster.total.ttft_p99_s << " s, round-robin "
                              << round_robin.cluster.total.ttft_p99_s << " s");
  CHECK(prefix.hit_rate() >= 0.9 * big.hit_rate());
  CHECK(prefix.hit_rate() > round_robin.hit_rate());
  CHECK(prefix.cluster.total.ttft_p99_s < round_robin.cluster.total.ttft_p99_s);
  CHECK(big.evicted_pages > 0);  // capacity mattered
  for (const ReplayResult* r : {&big, &prefix, &round_robin}) CHECK(r->ok());
}

TEST_CASE("cluster replay: the command line's report, and its bad flags") {
  const testing::CliRun run =
      testing::run_cli({"replay", "--mode", "cluster", "--workers", "3", "--route", "least-loaded",
                        "--pool-bytes", "4GiB", "--json"});
  REQUIRE(run.status == 0);
  const nlohmann::json report = nlohmann::json::parse(run.out);
  CHECK(report["mode"] == "cluster");
  CHECK(report["workers"] == 3);
  CHECK(report["route"] == "least-loaded");
  REQUIRE(report["per_worker"].size() == 3);
  uint64_t requests = 0, hits = 0, prompts = 0;
  double busiest = 0, busy = 0;
  for (const auto& w : report["per_worker"]) {
    requests += w["requests"].get<uint64_t>();
    hits += w["hit_tokens"].get<uint64_t>();
    prompts += w["prompt_tokens"].get<uint64_t>();
    busiest = std::max(busiest, w["busy_seconds"].get<double>());
    busy += w["busy_seconds"].get<double>();
    CHECK(w["peak_load_blocks"].get<double>() > 0);
  }
  CHECK(requests == report["requests"].get<uint64_t>());
  CHECK(report["hit_rate"].get<double>() == doctest::Approx(double(hits) / double(prompts)));
  CHECK(report["load_imbalance"].get<double>() == doctest::Approx(busiest / (busy / 3)));
  CHECK(report["ttft_p50_seconds"].get<double>() <= report["ttft_p99_seconds"].get<double>());

  const std::pair<std::vector<std::string>, std::string> bad[] = {
      {{"--mode", "cluster", "--workers", "0"}, "--workers: 0 is outside [1, 1024]"},
      {{"--mode", "cluster", "--route", "random"}, "--route: unknown routing policy 'random'"},
      {{"--mode", "cluster", "--overlap-weight", "2"},
       "--overlap-weight: only --route prefix-load has a cost to weigh"},
      {{"--mode", "engine", "--workers", "2"}, "--workers: cluster mode only (add --mode cluster)"},
      {{"--route", "prefix"}, "--route: cluster mode only"},
      {{"--mode", "cluster", "--kv-events", "tcp://127.0.0.1:*"},
       "--kv-events: not in cluster mode"},
      {{"--mode", "cluster", "--sweep", "1e5,2e5"}, "--sweep: cache mode only"},
      {{"--mode", "cluster", "--no-cache"}, "--no-cache: not in cluster mode"},
      {{"--mode", "cluster", "--host-capacity-tokens", "1e6"},
       "--host-capacity-tokens: not in cluster mode"},
  };
  expect_refused(bad);
}

// Predicted against delivered (cluster_replay.h). A hand-built trace on 2 workers with 16-token
// pages and a pool far larger than it, so nothing is evicted; every step is well under a second:
//   r0 t=0   A = content 1, 64 tokens                -> worker 0 (no overlap, equal loads)
//   r1 t=0   B = content 2, 48 tokens                -> worker 1 (worker 0 has r0's load)
//   r2 t=10  A + content 3, 40 tokens (104)          -> A's 4 pages are on worker 0
//   r3 t=20  B again (48)                            -> B's 3 pages are on worker 1; the engine
//                                                       computes the last token: cut to 32
//   r4 t=30  r2's prompt again (104)                 -> r2's 6 whole pages (96) are on worker 0
TEST_CASE("cluster replay: predicted against delivered hits on a hand-built trace, by delay") {
  const Trace trace = parse_native(
      "{\"radixkv_trace\": 1}\n"
      "{\"id\": 0, \"t\": 0, \"segs\": [[1, 64]], \"out\": 2}\n"
      "{\"id\": 1, \"t\": 0, \"segs\": [[2, 48]], \"out\": 2}\n"
      "{\"id\": 2, \"t\": 10, \"segs\": [[1, 64], [3, 40]], \"out\": 2}\n"
      "{\"id\": 3, \"t\": 20, \"segs\": [[2, 48]], \"out\": 2}\n"
      "{\"id\": 4, \"t\": 30, \"segs\": [[1, 64], [3, 40]], \"out\": 2}\n",
      "hand-built");
  struct Expected {
    double delay;
    std::vector<uint32_t> chosen;         // per request
    std::vector<uint64_t> predicted;      // per request
    router::OverlapGap worker0, worker1;  // built below from per-request (predicted, delivered)
  };
  auto gap = [](std::initializer_list<std::pair<uint64_t, uint64_t>> observed) {
    router::OverlapGap g;
    for (const auto& [predicted, delivered] : observed) g.add(predicted, delivered);
    return g;
  };
  const Expected cases[] = {
      // Fresh events: the index is the caches, every prediction is exact.
      {0,
       {0, 1, 0, 1, 0},
       {0, 0, 64, 32, 96},
       gap({{0, 0}, {64, 64}, {96, 96}}),
       gap({{0, 0}, {32, 32}})},
      // 15 s: r2 (t=10) does not see r0's events yet (due at ~15): worker 0 by load, where A is
      // reused unseen; r3 and r4 see everything that ended 15 s before them.
      {15,
       {0, 1, 0, 1, 0},
       {0, 0, 0, 32, 96},
       gap({{0, 0}, {0, 64}, {96, 96}}),
       gap({{0, 0}, {32, 32}})},
      // Longer than the trace: the index stays empty, every request after r1 goes to worker 0 by
      // load; B was never there (r3 delivers 0), A and r2's prompt were (under-predicted).
      {1000,
       {0, 1, 0, 0, 0},
       {0, 0, 0, 0, 0},
       gap({{0, 0}, {0, 64}, {0, 0}, {0, 96}}),
       gap({{0, 0}})},
  };
  for (const Expected& e : cases) {
    CAPTURE(e.delay);
    ClusterReplayConfig config = cluster(2, RoutePolicy::kPrefix, 1024);
    config.event_delay_s = e.delay;
    std::vector<RouteRecord> records;
    config.on_route = [&](const RouteRecord& r) { records.push_back(r); };
    const ReplayResult result = replay_cluster(trace, config);
    REQUIRE(result.ok());
    REQUIRE(records.size() == 5);
    for (size_t k = 0; k < 5; ++k) {
      CAPTURE(k);
      CHECK(records[k].chosen == e.chosen[k]);
      CHECK(records[k].predicted_hit_tokens == e.predicted[k]);
    }
    const ClusterResult& c = result.cluster;
    CHECK(c.event_delay_s == e.delay);
    CHECK(c.per_worker[0].overlap == e.worker0);
    CHECK(c.per_worker[1].overlap == e.worker1);
    router::OverlapGap both = e.worker0;
    both += e.worker1;
    CHECK(c.overlap == both);
    CHECK(c.overlap.delivered_tokens == result.hit_tokens);  // the hit rate's own hits
    CHECK(result.evicted_pages == 0);
    if (e.delay == 1000) CHECK(c.event_batches == 0);  // every batch came due after r4
  }
}

TEST_CASE(
    "cluster replay: with fresh events, requests that do not overlap in time are predicted "
    "exactly") {
  GenConfig gen;
  gen.conversations = 40;
  gen.seed = 5;
  Trace trace = parse_native(generate_native(gen), "generated");
  // Each request arrives long after the one before it has finished: the router sees every
  // worker's cache as it is when the request is admitted, evictions included.
  for (size_t k = 0; k < trace.requests.size(); ++k) trace.requests[k].arrival_s = 100.0 * k;
  for (RoutePolicy policy : kPolicies) {
    CAPTURE(to_string(policy));
    const ReplayResult result = replay_cluster(trace, cluster(3, policy, 1536));
    REQUIRE(result.ok());
    const router::OverlapGap& g = result.cluster.overlap;
    CHECK(g.observations == trace.requests.size());
    CHECK(g.gap_tokens() == 0);
    CHECK(g.mismatched == 0);
    CHECK(g.predicted_tokens == g.delivered_tokens);
    CHECK(g.delivered_tokens == result.hit_tokens);
    CHECK(g.delivered_tokens > 0);    // there was reuse to predict
    CHECK(result.evicted_pages > 0);  // and evictions the index had to follow
  }
}

TEST_CASE(
    "cluster replay: delayed events widen the gap, and the sums agree per worker and in total") {
  GenConfig gen;
  gen.conversations = 120;
  gen.seed = 9;
  const Trace trace = parse_native(generate_native(gen), "generated");
  for (RoutePolicy policy : {RoutePolicy::kPrefix, RoutePolicy::kPrefixLoad}) {
    CAPTURE(to_string(policy));
    uint64_t gap_fresh = 0;
    for (double delay : {0.0, 60.0}) {
      CAPTURE(delay);
      ClusterReplayConfig config = cluster(3, policy, 2048);
      config.event_delay_s = delay;
      std::vector<uint64_t> predicted_per_worker(3, 0);
      config.on_route = [&](const RouteRecord& r) {
        predicted_per_worker[r.chosen] += r.predicted_hit_tokens;
      };
      const ReplayResult result = replay_cluster(trace, config);
      REQUIRE(result.ok());
      const ClusterResult& c = result.cluster;
      REQUIRE(c.total.rejected == 0);  // every routed request was admitted, so observed
      router::OverlapGap sum;
      for (uint32_t w = 0; w < 3; ++w) {
        CAPTURE(w);
        const ClusterWorkerResult& r = c.per_worker[w];
        const router::OverlapGap& g = r.overlap;
        CHECK(g.observations == r.requests);
        CHECK(g.delivered_tokens == r.hit_tokens);
        CHECK(g.predicted_tokens == predicted_per_worker[w]);
        CHECK(g.predicted_tokens + g.underpredicted_tokens ==
              g.delivered_tokens + g.overpredicted_tokens);
        CHECK(g.gap_at_most.front() == g.observations - g.mismatched);  // bucket le=0
        sum += g;
      }
      CHECK(c.overlap == sum);
      CHECK(c.overlap.delivered_tokens == result.hit_tokens);
      if (delay == 0) {
        gap_fresh = c.overlap.gap_tokens();
      } else {
        MESSAGE(to_string(policy) << ": gap " << gap_fresh << " tokens fresh, "
                                  << c.overlap.gap_tokens() << " with 60 s of delay");
        CHECK(c.overlap.gap_tokens() > gap_fresh);
        CHECK(c.overlap.underpredicted_tokens > 0);  // reuse the router did not see coming
      }
    }
  }
}

TEST_CASE("cluster replay: an event delay must be a finite number of seconds >= 0") {
  const Trace trace = parse_native(
      "{\"radixkv_trace\": 1}\n{\"id\": 0, \"t\": 0, \"segs\": [[1, 64]], \"out\": 2}\n", "one");
  for (double bad : {-1.0, -1e-9, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CAPTURE(bad);
    ClusterReplayConfig config = cluster(2, RoutePolicy::kPrefix, 64);
    config.event_delay_s = bad;
    CHECK_THROWS_WITH_AS(replay_cluster(trace, config),
                         doctest::Contains("the event delay must be a finite number of seconds"),
                         std::invalid_argument);
  }
  const std::pair<std::vector<std::string>, std::string> bad[] = {
      {{"--mode", "cluster", "--event-delay=-1"}, "--event-delay: -1 is outside [0, 1000000000]"},
      {{"--mode", "cluster", "--event-delay", "nan"}, "--event-delay: 'nan' is not a number"},
      {{"--mode", "cluster", "--event-delay", "inf"}, "--event-delay: 'inf' is not a number"},
      {{"--mode", "cluster", "--event-delay", "1e10"}, "--event-delay: 1e10 is outside"},
      {{"--mode", "cluster", "--event-delay", "soon"}, "--event-delay: 'soon' is not a number"},
      {{"--mode", "engine", "--event-delay", "1"},
       "--event-delay: cluster mode only (add --mode cluster)"},
  };
  expect_refused(bad);
}

TEST_CASE("cluster replay: the command line reports predicted against delivered") {
  for (const std::string delay : {"0", "60"}) {
    CAPTURE(delay);
    const testing::CliRun run =
        testing::run_cli({"replay", "--mode", "cluster", "--workers", "4", "--route", "prefix",
                          "--pool-bytes", "4GiB", "--event-delay", delay, "--json"});
    REQUIRE(run.status == 0);
    const nlohmann::json report = nlohmann::json::parse(run.out);
    CHECK(report["event_delay_seconds"].get<double>() == std::stod(delay));
    const nlohmann::json& total = report["overlap"];
    for (const char* key : {"observations", "predicted_tokens", "delivered_tokens",
                            "overpredicted_tokens", "underpredicted_tokens", "mispredicted"}) {
      CAPTURE(key);
      uint64_t sum = 0;
      for (const auto& w : report["per_worker"]) sum += w["overlap"][key].get<uint64_t>();
      CHECK(sum == total[key].get<uint64_t>());
    }
    CHECK(total["gap_tokens"].get<uint64_t>() ==
          total["overpredicted_tokens"].get<uint64_t>() +
              total["underpredicted_tokens"].get<uint64_t>());
    CHECK(total["delivered_tokens"].get<uint64_t>() == report["hit_tokens"].get<uint64_t>());
    CHECK(total["observations"].get<uint64_t>() == report["requests"].get<uint64_t>());
    const testing::CliRun text = testing::run_cli({"replay", "--mode", "cluster", "--workers", "4",
                                                   "--pool-bytes", "4GiB", "--event-delay", delay});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("predicted hits") != std::string::npos);
    CHECK((text.out.find("event delay") != std::string::npos) == (delay != "0"));
  }
}
