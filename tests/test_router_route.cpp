// The routing decision: Dynamo's cost on hand-worked cases, against a brute-force reference over
// random candidates, against the index; and the JSON of POST /route, with an error per bad field.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include <xxhash.h>

#include "events/block_hash.h"
#include "router/route_api.h"
#include "router/route_cost.h"

using namespace radixkv;
using namespace radixkv::router;

namespace {

// A candidate holding `overlap` blocks, `weighted` of them counted at their tiers' weights.
CandidateScore candidate(std::string worker, double overlap, double load,
                         std::optional<double> weighted = std::nullopt) {
  return {std::move(worker), true, overlap, weighted.value_or(overlap), load, 0, 0};
}

// The documented rule, by brute force: every score from the formula, then the first candidate
// in the order (score, load, -weighted overlap, position).
size_t reference_choice(const std::vector<CandidateScore>& cs, double request, double weight) {
  std::vector<size_t> order(cs.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](size_t i) {
    const double prefill = std::max(request - cs[i].weighted_overlap_blocks, 0.0);
    return std::tuple(weight * prefill + cs[i].load + request, cs[i].load,
                      -cs[i].weighted_overlap_blocks, i);
  };
  return *std::min_element(order.begin(), order.end(),
                           [&](size_t a, size_t b) { return key(a) < key(b); });
}

}  // namespace

TEST_CASE("router: Dynamo's cost, worked by hand") {
  SUBCASE("the worker holding the prefix wins when loads are close") {
    // a: 1.0 * (10 - 6) + (2 + 10) = 16;  b: 1.0 * 10 + (0 + 10) = 20
    const RouteDecision d = choose_worker({candidate("a", 6, 2), candidate("b", 0, 0)}, 10, {});
    CHECK(d.chosen == 0);
    CHECK(d.outcome == RouteOutcome::kPrefixHit);
    CHECK(d.candidates[0].prefill_blocks == 4);
    CHECK(d.candidates[0].score == 16);
    CHECK(d.candidates[1].score == 20);
  }
  SUBCASE("equal overlaps: the smaller load wins") {
    const RouteDecision d = choose_worker({candidate("a", 3, 5), candidate("b", 3, 1)}, 8, {});
    CHECK(d.chosen == 1);
    CHECK(d.outcome == RouteOutcome::kPrefixHit);
  }
  SUBCASE("a heavy load outweighs the prefix") {
    // a: 2 + 40 = 42;  b: 10 + 10 = 20
    const RouteDecision d = choose_worker({candidate("a", 8, 30), candidate("b", 0, 0)}, 10, {});
    CHECK(d.chosen == 1);
    CHECK(d.outcome == RouteOutcome::kLoadOverPrefix);
  }
  SUBCASE("a larger weight prefers the prefix again") {
    // a: 4 * 2 + 40 = 48;  b: 4 * 10 + 10 = 50
    const RouteDecision d = choose_worker({candidate("a", 8, 30), candidate("b", 0, 0)}, 10, {4});
    CHECK(d.chosen == 0);
  }
  SUBCASE("weight 0 routes on load alone; no overlap anywhere") {
    const RouteDecision d = choose_worker({candidate("a", 0, 3), candidate("b", 0, 2)}, 10, {0});
    CHECK(d.chosen == 1);
    CHECK(d.outcome == RouteOutcome::kNoOverlap);
  }
  SUBCASE("a full tie goes to the candidate listed first; overlap past the request counts 0") {
    const RouteDecision d = choose_worker({candidate("a", 12, 1), candidate("b", 12, 1)}, 10, {});
    CHECK(d.chosen == 0);
    CHECK(d.candidates[0].prefill_blocks == 0);
  }
}

TEST_CASE("router: the choice equals the brute-force reference on random candidates") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<CandidateScore> cs;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) {
      // Small integers so that ties in score and load happen often.
      // Some blocks on the CPU: the weighted overlap is less than the overlap.
      const double overlap = static_cast<double>(rng() % 6);
      const double on_cpu = static_cast<double>(rng() % (static_cast<uint64_t>(overlap) + 1));
      cs.push_back(candidate(fmt::format("w{}", i), overlap, static_cast<double>(rng() % 5),
                             overlap - 0.5 * on_cpu));
    }
    const double request = static_cast<double>(rng() % 8) + (rng() % 2 ? 0.5 : 0);
    const double weight = static_cast<double>(rng() % 3);
    const RouteDecision d = choose_worker(cs, request, {weight});
    CAPTURE(trial);
    REQUIRE(d.chosen == reference_choice(cs, request, weight));
    const double best = std::max_element(cs.begin(), cs.end(), [](auto& a, auto& b) {
                          return a.weighted_overlap_blocks < b.weighted_overlap_blocks;
                        })->weighted_overlap_blocks;
    const RouteOutcome expected = best == 0 ? RouteOutcome::kNoOverlap
                                  : cs[d.chosen].weighted_overlap_blocks == best
                                      ? RouteOutcome::kPrefixHit
                                      : RouteOutcome::kLoadOverPrefix;
    CHECK(d.outcome == expected);
  }
}

TEST_CASE("router: bad routing inputs are refused, naming them") {
  CHECK_THROWS_WITH_AS(choose_worker({}, 1, {}), "no candidate worker to route to",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(choose_worker({candidate("a", 0, -1)}, 1, {}),
                       doctest::Contains("the load of worker a must be a finite number >= 0"),
                       std::invalid_argument);
  CHECK_THROWS_AS(choose_worker({candidate("a", 0, 0)}, 1, {std::nan("")}), std::invalid_argument);
  CHECK_THROWS_AS(choose_worker({candidate("a", 0, 0)}, -1, {}), std::invalid_argument);
}

TEST_CASE("router: routing against the index, with candidates it does not know") {
  BlockIndex index;
  const WorkerId a = index.add_worker("a");
  index.add_worker("b");
  events::BlockStored s;
  s.block_hashes = {11, 12};
  s.block_size = 4;
  index.apply(a, events::EventBatch{0, {s}, 0});
  RouteRequest request;
  request.block_hashes = {11, 12, 13};
  request.by_hashes = true;
  const Candidate listed[] = {{"new", 0}, {"b", 0}, {"a", 1}};
  const RouteDecision d = route(index, request, listed, {});
  CHECK(d.candidates[0].known == false);
  CHECK(d.candidates[0].overlap_blocks == 0);
  CHECK(d.candidates[2].overlap_blocks == 2);
  CHECK(d.candidates[d.chosen].worker == "a");  // 1 + (1 + 3) = 5 against 3 + 3 = 6
  const RouteDecision all = route(index, request, {}, {});
  REQUIRE(all.candidates.size() == 2);  // every worker the index knows, at load 0
  CHECK(all.candidates[all.chosen].worker == "a");
}

TEST_CASE("router: by tokens, overlaps are counted in the request's pages, tiers weighted") {
  BlockIndex index;
  const WorkerId gpu = index.add_worker("gpu"), cpu = index.add_worker("cpu");
  std::vector<TokenId> prompt(48);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<TokenId>(i * 7);
  events::BlockStored s;
  s.block_hashes = {1, 2, 3};
  s.block_size = 16;
  s.token_ids.assign(prompt.begin(), prompt.end());
  s.medium = "GPU";
  index.apply(gpu, events::KvEvent{s});
  s.block_hashes.resize(2);  // the CPU worker holds 2 blocks of 16, in CPU memory
  s.token_ids.resize(32);
  s.medium = "CPU";
  index.apply(cpu, events::KvEvent{s});
  RouteRequest request;
  request.tokens = prompt;
  request.page_size = 8;
  const RouteDecision d = route(index, request, {}, {});
  CHECK(d.request_blocks == 6);
  CHECK(d.candidates[0].overlap_blocks == 6);
  CHECK(d.candidates[1].overlap_blocks == 4);
  CHECK(d.candidates[1].weighted_overlap_blocks == doctest::Approx(3.2));  // 4 * 0.8
  CHECK(d.candidates[1].prefill_blocks == doctest::Approx(2.8));
  // The CPU worker, less loaded, wins unless its CPU blocks count too little.
  const Candidate loads[] = {{"gpu", 3}, {"cpu", 0}};
  CHECK(
      route(index, request, loads, {}).candidates[route(index, request, loads, {}).chosen].worker ==
      "cpu");
  CHECK(route(index, request, loads, {5})
            .candidates[route(index, request, loads, {5}).chosen]
            .worker == "gpu");
}

TEST_CASE("router: POST /route bodies, good ones") {
  const RouteQuery by_tokens = parse_route_request(
      R"({"tokens": [1, 2, 3, 4, 5, 6, 7], "page_size": 2, "namespace": 9, "lora_name": "sql",
          "cache_salt": "s", "candidates": [{"worker": "a", "load": 2.5}, {"worker": "b"}]})");
  CHECK(by_tokens.request.tokens == std::vector<TokenId>{1, 2, 3, 4, 5, 6, 7});
  CHECK(by_tokens.request.page_size == 2);
  CHECK(by_tokens.request.ns.ns == 9);
  CHECK(by_tokens.request.ns.lora_name == "sql");
  CHECK(by_tokens.request.ns.cache_salt == "s");
  CHECK_FALSE(by_tokens.request.by_hashes);
  CHECK(by_tokens.request.request_blocks() == 3.5);
  REQUIRE(by_tokens.candidates.size() == 2);
  CHECK(by_tokens.candidates[0].load == 2.5);
  CHECK(by_tokens.candidates[1].load == 0);
  CHECK(parse_route_request(R"({"tokens": [1]})").request.page_size == 16);  // vLLM's default

  const RouteQuery by_hashes =
      parse_route_request(R"({"block_hashes": [18446744073709551615, 0, -3, "ab12"]})");
  CHECK(by_hashes.request.block_hashes == std::vector<BlockHash>{18446744073709551615ULL, 0,
                                                                 static_cast<BlockHash>(-3),
                                                                 XXH3_64bits("ab12", 4)});
  CHECK(by_hashes.request.by_hashes);
  CHECK(by_hashes.request.request_blocks() == 4);
  CHECK(by_hashes.candidates.empty());
  CHECK(parse_route_request(R"({"tokens": [-5], "page_size": 1})").request.tokens ==
        std::vector<TokenId>{-5});
}

TEST_CASE("router: POST /route bodies, each bad one names its field") {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "body: not JSON"},
      {"[1]", "body: expected a JSON object"},
      {"{}", "body: give exactly one of \"tokens\""},
      {R"({"tokens": [1], "block_hashes": [1], "page_size": 1})", "body: give exactly one of"},
      {R"({"tokens": [1], "page_size": 0})", "page_size: must be at least 1"},
      {R"({"tokens": [1], "page_size": -2})", "page_size: expected an integer >= 0, got -2"},
      {R"({"tokens": [1], "page_size": 1.5})", "page_size: expected an integer >= 0, got 1.5"},
      {R"({"tokens": "abc", "page_size": 1})", "tokens: expected an array, got \"abc\""},
      {R"({"tokens": [1], "lora_name": 3})", "lora_name: expected a string, got 3"},
      {R"({"tokens": [1], "cache_salt": [3]})", "cache_salt: expected a string, got an array"},
      {R"({"tokens": [1, "x"], "page_size": 1})", "tokens[1]: expected an integer, got \"x\""},
      {R"({"tokens": [2147483648], "page_size": 1})", "tokens[0]: 2147483648 is not a 32-bit"},
      {R"({"tokens": [-2147483649], "page_size": 1})", "tokens[0]: -2147483649 is not a 32-bit"},
      {R"({"tokens": [1], "page_size": 1, "namespace": -1})", "namespace: expected an integer"},
      {R"({"block_hashes": [1, 2.5]})",
       "block_hashes[1]: expected a block hash (an integer or a string), got 2.5"},
      {R"({"block_hashes": [1, ""]})", "block_hashes[1]: an empty block hash"},
      // Numbers out of range, and bodies too deep to walk (issue 29, items 6 and 1).
      {R"({"block_hashes": [1], "candidates": [{"worker": "a", "load": 1e400}]})",
       "body: not JSON, or a number out of range"},
      {R"({"block_hashes": [18446744073709551616]})", "body: not JSON, or a number out of range"},
      {R"({"block_hashes": [[[[[[[[[[1]]]]]]]]]]})", "body: nested deeper than 8 levels"},
      {R"({"block_hashes": [1], "candidates": []})", "candidates: empty"},
      {R"({"block_hashes": [1], "candidates": [{"load": 1}]})",
       "candidates[0].worker: expected a worker name"},
      {R"({"block_hashes": [1], "candidates": [{"worker": "a", "load": -1}]})",
       "candidates[0].load: expected a number >= 0, got -1"},
      {R"({"block_hashes": [1], "candidates": [{"worker": "a", "load": "x"}]})",
       "candidates[0].load: expected a number >= 0, got \"x\""},
      {R"({"block_hashes": [1], "candidates": [{"worker": "a", "load": [1, 2]}]})",
       "candidates[0].load: expected a number >= 0, got an array"},
      {R"({"block_hashes": [1], "candidates": [3]})", "candidates[0]: expected an object, got 3"},
      {R"({"tokens": ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]})",
       "tokens[0]: expected an integer, got \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..."},
  };
  for (const auto& [body, names] : cases) {
    CAPTURE(body);
    try {
      parse_route_request(body);
      FAIL("accepted a bad body");
    } catch (const RouteRequestError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(names) != std::string::npos, e.what());
    }
  }
}

// Issue 29, item 1: 100,000 nested arrays in block_hashes crashed the router (the 400 path dumped
// the bad value, recursing per level). The parser refuses them before anything walks them.
TEST_CASE("router: a body of 100,000 nested arrays is refused, quickly, as too deep") {
  const std::string body =
      R"({"block_hashes": )" + std::string(100'000, '[') + std::string(100'000, ']') + "}";
  CHECK_THROWS_WITH_AS(parse_route_request(body), "body: nested deeper than 8 levels",
                       RouteRequestError);
}

TEST_CASE("router: the JSON the router answers with") {
  const RouteDecision d = choose_worker({candidate("a", 6, 2, 5.5), candidate("b", 0, 0)}, 10, {});
  const nlohmann::json out = nlohmann::json::parse(render_route_decision(d, "00ff-7", 96));
  CHECK(out["worker"] == "a");
  CHECK(out["route_id"] == "00ff-7");
  CHECK(out["predicted_hit_tokens"] == 96);
  CHECK(out["outcome"] == "prefix_hit");
  CHECK(out["request_blocks"] == 10.0);
  REQUIRE(out["candidates"].size() == 2);
  CHECK(out["candidates"][0]["overlap_blocks"] == 6);
  CHECK(out["candidates"][0]["weighted_overlap_blocks"] == 5.5);
  CHECK(out["candidates"][0]["score"] == 16.5);
  CHECK(out["candidates"][1]["known"] == true);
  const nlohmann::json held =
      nlohmann::json::parse(render_holdings("a", {{18446744073709551615ULL, {"CPU", "GPU"}}}));
  CHECK(held["pages"] == 1);
  CHECK(held["blocks"][0]["hash"].get<uint64_t>() == 18446744073709551615ULL);
  CHECK(held["blocks"][0]["mediums"] == nlohmann::json::array({"CPU", "GPU"}));
  CHECK(nlohmann::json::parse(render_error("x: bad"))["error"] == "x: bad");
}
