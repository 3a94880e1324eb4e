// Cluster mode (tools/replay/cluster_replay.h): the routing rules against a reference model written
// here, every decision of a whole replay against the same model, one worker against engine mode,
// and the claim on a generated multi-turn trace: prefix routing keeps >= 90 % of the hit
// rate of one worker with N times the capacity, and beats round-robin in hit rate and TTFT p99.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

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
  for (const auto& [args, message] : bad) {
    CAPTURE(message);
    std::vector<std::string> argv = {"replay"};
    argv.insert(argv.end(), args.begin(), args.end());
    const testing::CliRun refused = testing::run_cli(argv);
    CHECK(refused.status == 2);
    CHECK_MESSAGE(refused.err.find(message) != std::string::npos, refused.err);
  }
}
