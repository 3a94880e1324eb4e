// `radixkv router` in front of publishers shaped like real engines (tests/engine_publisher.py, an
// encoder of its own in Python, field for field after vLLM's, SGLang's and LMCache's structs): the
// index fills whatever the hashes look like (SHA-256 bytes, integers, signed integers), POST /route
// with a prompt's tokens finds it on every kind of worker — radixkv's among them — each at its own
// block size, a LoRA name and a cache salt key blocks as vLLM keys them, and data parallel ranks
// are workers of their own on ports offset as vLLM offsets them. Every answer is checked against
// the publisher's own account of what it holds.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "tests/engine_process.h"
#include "tests/router_test_client.h"

using namespace radixkv;
using namespace std::chrono_literals;
using radixkv::testing::EngineProcess;
using radixkv::testing::eventually;
using radixkv::testing::RouterProcess;

namespace {

const std::string kRadixkv = RADIXKV_BINARY;
const std::string kScript = RADIXKV_EVENT_SCRIPT_BINARY;

std::vector<int> random_tokens(std::mt19937_64& rng, size_t n) {
  std::vector<int> tokens(n);
  for (int& t : tokens) t = static_cast<int>(rng() % 30000);
  return tokens;
}

// Waits until the router has applied every batch each engine published.
void caught_up(RouterProcess& router, const std::map<std::string, uint64_t>& next_seq) {
  const bool done = eventually(
      [&] {
        const nlohmann::json health = router.get_json("/healthz");
        for (const auto& w : health["workers"]) {
          const auto it = next_seq.find(w["name"].get<std::string>());
          if (it != next_seq.end() && w["next_seq"].get<uint64_t>() != it->second) return false;
        }
        return true;
      },
      30s);
  if (!done) FAIL_CHECK("not caught up; metrics:\n" << router.get_text("/metrics"));
}

// The candidate of `worker` in a /route answer.
nlohmann::json candidate(const nlohmann::json& answer, const std::string& worker) {
  for (const auto& c : answer["candidates"]) {
    if (c["worker"] == worker) return c;
  }
  FAIL("no candidate " << worker);
  return {};
}

// What the checks met: overlaps, and overlaps partly on the CPU (weighted below their length).
struct Seen {
  int found = 0, on_cpu = 0;
};

// The router's overlaps for `query` equal what each engine says it holds (in tokens; the router
// answers in pages of 16).
Seen check_against_engines(RouterProcess& router, std::vector<EngineProcess*> engines,
                           const nlohmann::json& query) {
  Seen seen;
  nlohmann::json body = query;
  body["page_size"] = 16;
  if (body["lora_name"].is_null()) body.erase("lora_name");
  if (body["cache_salt"].is_null()) body.erase("cache_salt");
  const nlohmann::json answer = router.route(body);
  for (EngineProcess* e : engines) {
    const auto [tokens, weighted] = e->overlap(query);
    const nlohmann::json c = candidate(answer, e->name);
    CAPTURE(e->name);
    CHECK(c["overlap_blocks"].get<double>() * 16 == doctest::Approx(tokens));
    CHECK(c["weighted_overlap_blocks"].get<double>() * 16 == doctest::Approx(weighted));
    seen.found += tokens > 0;
    seen.on_cpu += weighted < tokens;
  }
  return seen;
}

}  // namespace

TEST_CASE("router: engines: vLLM-shaped publishers, bytes and integer hashes, routed by tokens") {
  if (const auto why = testing::python_missing(testing::kDebianPython))
    RADIXKV_SKIP_OUTSIDE_CI(*why);
  // vLLM today (SHA-256 bytes), with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES, and its older arrays.
  EngineProcess bytes("bytes", {"--shape", "vllm", "--hash", "bytes"});
  EngineProcess ints("ints", {"--shape", "vllm", "--hash", "int"});
  EngineProcess arrays("arrays", {"--shape", "vllm-array", "--hash", "int"});
  REQUIRE((bytes.started && ints.started && arrays.started));
  std::mt19937_64 rng(5);
  const nlohmann::json own[3] = {{{"tokens", random_tokens(rng, 100)}},
                                 {{"tokens", random_tokens(rng, 100)}},
                                 {{"tokens", random_tokens(rng, 100)}}};
  const nlohmann::json shared = {{"tokens", random_tokens(rng, 64)}};
  const nlohmann::json adapter = {
      {"tokens", random_tokens(rng, 48)}, {"lora_name", "sql"}, {"cache_salt", "tenant-7"}};
  std::map<std::string, uint64_t> seq;
  EngineProcess* engines[3] = {&bytes, &ints, &arrays};
  for (int i = 0; i < 3; ++i) seq[engines[i]->name] = engines[i]->cache(own[i]);
  seq["bytes"] = bytes.cache(shared);
  seq["ints"] = ints.cache(shared);
  seq["bytes"] = bytes.cache(adapter);

  RouterProcess router(
      kRadixkv, {"--worker", bytes.flag(), "--worker", ints.flag(), "--worker", arrays.flag()});
  caught_up(router, seq);
  for (EngineProcess* e : engines) {
    CHECK(router.metric(
              fmt::format("radixkv_router_decode_errors_total{{worker=\"{}\"}}", e->name)) == 0);
    CHECK_FALSE(router.index_of(e->name).empty());
  }
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    const nlohmann::json answer = router.route({{"tokens", own[i]["tokens"]}, {"page_size", 16}});
    CHECK(answer["worker"] == engines[i]->name);
    CHECK(answer["outcome"] == "prefix_hit");
    CHECK(candidate(answer, engines[i]->name)["overlap_blocks"] == 6);  // 96 of 100 tokens
    CHECK(candidate(answer, engines[(i + 1) % 3]->name)["overlap_blocks"] == 0);
  }
  const nlohmann::json both = router.route({{"tokens", shared["tokens"]}, {"page_size", 16}});
  CHECK(candidate(both, "bytes")["overlap_blocks"] == 4);
  CHECK(candidate(both, "ints")["overlap_blocks"] == 4);
  // The LoRA name and the cache salt key the blocks: without them the prompt is not found.
  nlohmann::json by_adapter = adapter;
  by_adapter["page_size"] = 16;
  CHECK(candidate(router.route(by_adapter), "bytes")["overlap_blocks"] == 3);
  CHECK(candidate(router.route({{"tokens", adapter["tokens"]}, {"page_size", 16}}),
                  "bytes")["overlap_blocks"] == 0);
  for (const nlohmann::json& q : {own[0], own[1], shared, adapter}) {
    nlohmann::json query = q;
    for (const char* field : {"lora_name", "cache_salt"}) {
      if (!query.contains(field)) query[field] = nullptr;
    }
    check_against_engines(router, {&bytes, &ints, &arrays}, query);
  }

  // A workload with evictions (BlockRemoved by the engine's hashes), then a clear.
  for (EngineProcess* e : engines) seq[e->name] = e->steps(40);
  caught_up(router, seq);
  for (int q = 0; q < 10; ++q) {
    const std::optional<nlohmann::json> sample = engines[q % 3]->sample();
    if (sample) check_against_engines(router, {&bytes, &ints, &arrays}, *sample);
  }
  seq["bytes"] = bytes.clear();
  caught_up(router, seq);
  CHECK(router.index_of("bytes").empty());
  router.terminate();
}

TEST_CASE("router: engines: SGLang, vLLM with LMCache, and radixkv workers behind one router") {
  if (const auto why = testing::python_missing(testing::kDebianPython))
    RADIXKV_SKIP_OUTSIDE_CI(*why);
  // SGLang pages of 8; vLLM blocks of 16 with LMCache chunks of 64 in CPU memory; radixkv pages
  // of 4 (a scripted worker, radixkv's own EventBatcher and publisher).
  EngineProcess sglang(
      "sglang", {"--shape", "sglang", "--block-size", "8", "--capacity", "300", "--seed", "2"});
  EngineProcess lmcache("lmcache", {"--shape", "lmcache", "--chunk", "64", "--capacity", "150",
                                    "--cpu", "--seed", "3"});
  REQUIRE((sglang.started && lmcache.started));
  const std::string truth = testing::scratch_path("radixkv-truth.json");
  testing::ChildProcess radixkv(
      {kScript, "--truth", truth, "--seed", "4", "--steps", "60", "--pin", "5000:6", "--stay"});
  const std::optional<std::string> endpoints = radixkv.read_line_starting("endpoints ", 30s);
  REQUIRE(endpoints);
  std::istringstream words(*endpoints);
  std::string word, pub, replay;
  words >> word >> pub >> replay;
  REQUIRE(radixkv.read_line_starting("published ", 60s));

  std::mt19937_64 rng(9);
  const nlohmann::json prompt = {{"tokens", random_tokens(rng, 200)}};
  std::map<std::string, uint64_t> seq;
  seq["sglang"] = sglang.cache(prompt);
  seq["lmcache"] = lmcache.cache(prompt);
  RouterProcess router(kRadixkv, {"--worker", sglang.flag(), "--worker", lmcache.flag(), "--worker",
                                  fmt::format("radixkv={},{}", pub, replay)});
  caught_up(router, seq);
  // The same 200 tokens: 25 SGLang pages of 8, 12 vLLM blocks of 16 and 3 LMCache chunks of 64.
  const nlohmann::json answer = router.route({{"tokens", prompt["tokens"]}, {"page_size", 8}});
  CHECK(candidate(answer, "sglang")["overlap_blocks"] == 25);
  CHECK(candidate(answer, "lmcache")["overlap_blocks"] == 24);
  CHECK(candidate(answer, "radixkv")["overlap_blocks"] == 0);
  // radixkv's pinned prefix (tokens 5000.., 6 pages of 4), in its namespace 0.
  std::vector<int> pinned(24);
  for (int i = 0; i < 24; ++i) pinned[i] = 5000 + i;
  CHECK(eventually([&] {
    const nlohmann::json own = router.route({{"tokens", pinned}, {"page_size", 4}});
    return own["worker"] == "radixkv" && candidate(own, "radixkv")["overlap_blocks"] == 6;
  }));

  // Workloads with evictions, LMCache's chunks staying in CPU memory after the GPU blocks went:
  // every answer is what the engines say they hold, tier weights included.
  seq["sglang"] = sglang.steps(80);
  seq["lmcache"] = lmcache.steps(80);
  caught_up(router, seq);
  Seen seen;
  for (int q = 0; q < 16; ++q) {
    EngineProcess& from = q % 2 == 0 ? sglang : lmcache;
    const std::optional<nlohmann::json> sample = from.sample();
    REQUIRE(sample);
    nlohmann::json query = *sample;
    if (q % 4 == 1) {  // the first half of a cached prompt
      const std::vector<int> tokens = query["tokens"];
      query["tokens"] = std::vector<int>(tokens.begin(), tokens.begin() + tokens.size() / 2);
    }
    const Seen s = check_against_engines(router, {&sglang, &lmcache}, query);
    seen.found += s.found;
    seen.on_cpu += s.on_cpu;
  }
  CHECK(seen.found >= 16);
  CHECK(seen.on_cpu > 0);  // LMCache's chunks held where vLLM's GPU blocks were evicted
  CHECK(router.metric("radixkv_router_decode_errors_total{worker=\"sglang\"}") == 0);
  CHECK(router.metric("radixkv_router_decode_errors_total{worker=\"lmcache\"}") == 0);
  router.terminate();
}

TEST_CASE("router: engines: data parallel ranks are workers on ports offset by rank") {
  if (const auto why = testing::python_missing(testing::kDebianPython))
    RADIXKV_SKIP_OUTSIDE_CI(*why);
  std::mt19937_64 rng(std::random_device{}());
  // Base ports: ranks take base + rank, as vLLM's publisher does. A base in use: another try.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int pub_base = 20000 + static_cast<int>(rng() % 20000), replay_base = pub_base + 10;
    std::vector<std::unique_ptr<EngineProcess>> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.push_back(std::make_unique<EngineProcess>(
          fmt::format("e/dp{}", r),
          std::vector<std::string>{"--shape", "vllm", "--rank", std::to_string(r), "--pub-port",
                                   std::to_string(pub_base), "--replay-port",
                                   std::to_string(replay_base)}));
    }
    if (!ranks[0]->started || !ranks[1]->started) continue;
    CHECK(ranks[1]->pub == fmt::format("tcp://127.0.0.1:{}", pub_base + 1));
    const nlohmann::json p0 = {{"tokens", random_tokens(rng, 32)}},
                         p1 = {{"tokens", random_tokens(rng, 48)}};
    const std::map<std::string, uint64_t> seq = {{"e/dp0", ranks[0]->cache(p0)},
                                                 {"e/dp1", ranks[1]->cache(p1)}};
    RouterProcess router(
        kRadixkv, {"--worker", fmt::format("e=tcp://127.0.0.1:{},tcp://127.0.0.1:{},dp=2", pub_base,
                                           replay_base)});
    caught_up(router, seq);
    nlohmann::json answer = router.route({{"tokens", p1["tokens"]}, {"page_size", 16}});
    CHECK(answer["worker"] == "e/dp1");
    CHECK(candidate(answer, "e/dp1")["overlap_blocks"] == 3);
    CHECK(candidate(answer, "e/dp0")["overlap_blocks"] == 0);
    answer = router.route({{"tokens", p0["tokens"]}, {"page_size", 16}});
    CHECK(answer["worker"] == "e/dp0");
    router.terminate();
    return;
  }
  FAIL("no free base ports in 5 tries");
}
