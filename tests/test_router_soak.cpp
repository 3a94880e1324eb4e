// A soak of `radixkv router` (label `slow`): 8 engines of every shape (tests/engine_publisher.py:
// vLLM with bytes and integer hashes, with a CPU tier, vLLM's older arrays, SGLang, vLLM with
// LMCache) publish a workload of chats and agent sessions over shared system prompts, with
// evictions, for RADIXKV_SOAK_SECONDS (default 10, and at least 4 rounds, one with a restart: CI
// runs the default; a longer soak is run by hand, e.g. RADIXKV_SOAK_SECONDS=600), while client
// threads route without pause. At each quiet
// point (every engine's batches applied), the router's overlaps for cached prompts equal what each
// engine says it holds; every few rounds one engine restarts (a new cache, the same ports), and
// the router drops it and learns it again. The router's RSS stays under its bound throughout.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "tests/engine_process.h"
#include "tests/router_test_client.h"

using namespace radixkv;
using namespace std::chrono_literals;
using radixkv::testing::EngineProcess;
using radixkv::testing::eventually;
using radixkv::testing::RouterProcess;

namespace {

const std::string kRadixkv = RADIXKV_BINARY;

constexpr size_t kMaxIndexPages = 40'000;
// The router's resident memory may not pass this: a base for the program, its libraries and
// buffers, and 2 KiB per indexed block (247 MiB at 10^6 blocks, program included: bench/README.md).
constexpr size_t kRssBound = (96u << 20) + kMaxIndexPages * 2048;

double soak_seconds() {
  const char* value = std::getenv("RADIXKV_SOAK_SECONDS");
  return value != nullptr ? std::atof(value) : 10;
}

size_t rss_bytes(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

struct EngineSpec {
  std::string name;
  std::vector<std::string> args;
};

const std::vector<EngineSpec> kEngines = {
    {"vllm-bytes", {"--shape", "vllm", "--hash", "bytes", "--capacity", "600"}},
    {"vllm-int", {"--shape", "vllm", "--hash", "int", "--capacity", "600"}},
    {"vllm-cpu", {"--shape", "vllm", "--capacity", "300", "--cpu"}},
    {"vllm-array", {"--shape", "vllm-array", "--hash", "int", "--capacity", "600"}},
    {"sglang-a", {"--shape", "sglang", "--block-size", "8", "--capacity", "1200"}},
    {"sglang-b", {"--shape", "sglang", "--block-size", "8", "--capacity", "800"}},
    {"lmcache-a", {"--shape", "lmcache", "--chunk", "64", "--capacity", "400", "--cpu"}},
    {"lmcache-b", {"--shape", "lmcache", "--chunk", "64", "--capacity", "500"}},
};

std::unique_ptr<EngineProcess> start_engine(const EngineSpec& spec, uint64_t seed,
                                            const std::string& pub = "",
                                            const std::string& replay = "") {
  std::vector<std::string> args = spec.args;
  args.insert(args.end(), {"--seed", std::to_string(seed)});
  const auto port_of = [](const std::string& endpoint) {
    return endpoint.substr(endpoint.rfind(':') + 1);
  };
  if (!pub.empty())
    args.insert(args.end(), {"--pub-port", port_of(pub), "--replay-port", port_of(replay)});
  auto engine = std::make_unique<EngineProcess>(spec.name, args);
  REQUIRE(engine->started);
  return engine;
}

nlohmann::json route_body(const nlohmann::json& prompt) {
  nlohmann::json body = {{"tokens", prompt["tokens"]}, {"page_size", 16}};
  if (!prompt["lora_name"].is_null()) body["lora_name"] = prompt["lora_name"];
  return body;
}

}  // namespace

TEST_CASE("router: soak: 8 engines of every shape, clients routing, a restart, bounded memory") {
  if (const auto why = testing::python_missing(testing::kDebianPython))
    RADIXKV_SKIP_OUTSIDE_CI(*why);
  const double seconds = soak_seconds();
  MESSAGE("soaking for " << seconds << " s (RADIXKV_SOAK_SECONDS)");
  std::vector<std::unique_ptr<EngineProcess>> engines;
  for (size_t e = 0; e < kEngines.size(); ++e) engines.push_back(start_engine(kEngines[e], e + 1));
  std::vector<std::string> flags;
  for (const auto& e : engines) flags.insert(flags.end(), {"--worker", e->flag()});
  flags.insert(flags.end(),
               {"--worker-timeout", "3", "--max-index-pages", std::to_string(kMaxIndexPages)});
  RouterProcess router(kRadixkv, flags);
  // Clients start once every worker is up (before that, a route without candidates is a 503).
  REQUIRE(eventually([&] {
    const nlohmann::json health = router.get_json("/healthz");
    for (const auto& w : health["workers"]) {
      if (w["state"] != "up") return false;
    }
    return true;
  }));

  // Clients route all along; their prompts are recent samples of the engines' sessions.
  std::mutex samples_mutex;
  std::vector<nlohmann::json> samples;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> routed{0}, route_failures{0};
  std::vector<std::string> failures;  // under samples_mutex
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client http("127.0.0.1", router.port);
      http.set_read_timeout(10, 0);
      std::mt19937_64 rng(c);
      while (!stop.load()) {
        nlohmann::json body;
        {
          std::lock_guard lock(samples_mutex);
          if (samples.empty()) {
            body = {{"tokens", std::vector<int>(64, c)}, {"page_size", 16}};
          } else {
            body = route_body(samples[rng() % samples.size()]);
          }
        }
        const auto res = http.Post("/route", body.dump(), "application/json");
        const bool good =
            res && res->status == 200 && nlohmann::json::parse(res->body)["worker"].is_string();
        (good ? routed : route_failures).fetch_add(1);
        if (!good) {
          const auto health = http.Get("/healthz");
          std::lock_guard lock(samples_mutex);
          failures.push_back((res ? fmt::format("{} {}", res->status, res->body)
                                  : "no answer: " + httplib::to_string(res.error())) +
                             (health ? " healthz " + health->body : ""));
        }
      }
    });
  }

  std::mt19937_64 rng(42);
  size_t max_rss = 0, checks = 0, found = 0, restarts = 0;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  for (int round = 0; std::chrono::steady_clock::now() < deadline || round < 4; ++round) {
    CAPTURE(round);
    if (round % 4 == 3) {  // one engine restarts: a new cache on the same ports
      const size_t e = rng() % engines.size();
      const std::string pub = engines[e]->pub, replay = engines[e]->replay;
      engines[e]->quit();
      engines[e].reset();
      REQUIRE(eventually(
          [&] { return router.get_json("/healthz")["workers"][e]["state"] == "down"; }, 10s));
      CHECK(router.index_of(kEngines[e].name).empty());
      engines[e] = start_engine(kEngines[e], 100 + round, pub, replay);
      ++restarts;
    }
    std::map<std::string, uint64_t> next_seq;
    for (auto& e : engines) next_seq[e->name] = e->steps(5 + static_cast<int>(rng() % 15));
    REQUIRE(eventually(
        [&] {
          const nlohmann::json health = router.get_json("/healthz");
          for (const auto& w : health["workers"]) {
            if (w["state"] != "up" || w["next_seq"] != next_seq.at(w["name"])) return false;
          }
          return true;
        },
        60s));
    // The quiet point: the router's answers are the engines' own accounts.
    for (int q = 0; q < 6; ++q) {
      const std::optional<nlohmann::json> sample = engines[rng() % engines.size()]->sample();
      if (!sample) continue;
      nlohmann::json query = *sample;
      if (q % 3 == 1) {
        const std::vector<int> tokens = query["tokens"];
        query["tokens"] = std::vector<int>(tokens.begin(), tokens.begin() + tokens.size() / 2);
      }
      {
        std::lock_guard lock(samples_mutex);
        samples.push_back(query);
        if (samples.size() > 64) samples.erase(samples.begin());
      }
      const nlohmann::json answer = router.route(route_body(query));
      for (size_t e = 0; e < engines.size(); ++e) {
        const auto [tokens, weighted] = engines[e]->overlap(query);
        const nlohmann::json& c = answer["candidates"][e];
        CAPTURE(kEngines[e].name);
        REQUIRE(c["worker"] == kEngines[e].name);
        CHECK(c["overlap_blocks"].get<double>() * 16 == doctest::Approx(tokens));
        CHECK(c["weighted_overlap_blocks"].get<double>() * 16 == doctest::Approx(weighted));
        ++checks;
        found += tokens > 0;
      }
    }
    max_rss = std::max(max_rss, rss_bytes(router.process.pid()));
    REQUIRE(router.metric("radixkv_router_index_pages_total") <= kMaxIndexPages);
  }
  stop = true;
  for (std::thread& t : clients) t.join();
  MESSAGE("routed " << routed.load() << ", " << checks << " overlaps checked (" << found
                    << " found), " << restarts << " restarts, router RSS at most "
                    << max_rss / (1 << 20) << " MiB");
  CHECK(route_failures.load() == 0);
  for (const std::string& f : failures) MESSAGE("route failed: " << f);
  CHECK(routed.load() > 100);
  CHECK(found * 16 > checks);  // a sampled prompt is mostly on one engine of the 8
  CHECK(restarts >= 1);
  CHECK(max_rss > 0);
  CHECK(max_rss < kRssBound);
  for (const auto& e : engines) {
    CHECK(router.metric(
              fmt::format("radixkv_router_decode_errors_total{{worker=\"{}\"}}", e->name)) == 0);
  }
  router.terminate();
  for (auto& e : engines) e->quit();
}
