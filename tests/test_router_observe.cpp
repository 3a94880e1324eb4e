// Predicted against delivered (router/overlap_gap.h, router/route_ledger.h): the gap's sums
// against sums written out here, the engine's cut of a match, every refusal of POST /observe with
// its reason counted, the ledger's bound, and the JSON of POST /observe.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <random>

#include "router/overlap_gap.h"
#include "router/route_api.h"
#include "router/route_ledger.h"

using namespace radixkv::router;
using namespace std::chrono_literals;

namespace {

using Clock = RouteLedger::Clock;
constexpr uint64_t kEpoch = 0xabcdef0123456789ULL;
const Clock::time_point t0{};

RouteLedger ledger(size_t capacity = 4, std::chrono::milliseconds ttl = 60s) {
  return RouteLedger({"gpu0", "gpu1"}, capacity, ttl, kEpoch);
}

}  // namespace

TEST_CASE("overlap gap: an engine's cut of a match, and the sums against a naive oracle") {
  CHECK(predicted_hit_tokens(64, 0, 16) == 64);    // no prompt length: no cut
  CHECK(predicted_hit_tokens(64, 64, 16) == 48);   // a whole prompt: its last page is computed
  CHECK(predicted_hit_tokens(64, 65, 16) == 64);   // one token past the pages: all reused
  CHECK(predicted_hit_tokens(32, 100, 16) == 32);  // the overlap is below the cut
  CHECK(predicted_hit_tokens(16, 1, 16) == 0);
  CHECK(predicted_hit_tokens(5, 5, 1) == 4);

  std::mt19937_64 rng(5);
  OverlapGap gap, first_half;
  uint64_t predicted = 0, delivered = 0, over = 0, under = 0, mismatched = 0;
  std::array<uint64_t, OverlapGap::kGapBuckets.size()> at_most{};
  for (int i = 0; i < 2000; ++i) {
    const uint64_t p = rng() % 3 == 0 ? 0 : rng() % 70'000;
    const uint64_t d = rng() % 4 == 0 ? p : rng() % 70'000;
    gap.add(p, d);
    if (i < 1000) first_half.add(p, d);
    predicted += p;
    delivered += d;
    const int64_t diff = static_cast<int64_t>(p) - static_cast<int64_t>(d);
    if (diff > 0) over += static_cast<uint64_t>(diff);
    if (diff < 0) under += static_cast<uint64_t>(-diff);
    mismatched += diff != 0;
    for (size_t b = 0; b < at_most.size(); ++b) {
      at_most[b] += static_cast<uint64_t>(std::abs(diff)) <= OverlapGap::kGapBuckets[b];
    }
  }
  CHECK(gap.observations == 2000);
  CHECK(gap.predicted_tokens == predicted);
  CHECK(gap.delivered_tokens == delivered);
  CHECK(gap.overpredicted_tokens == over);
  CHECK(gap.underpredicted_tokens == under);
  CHECK(gap.gap_tokens() == over + under);
  CHECK(gap.mismatched == mismatched);
  CHECK(gap.gap_at_most == at_most);
  CHECK(gap.gap_at_most[0] == 2000 - mismatched);
  CHECK(mismatched > 0);
  CHECK(mismatched < 2000);
  // Sums add: the first half plus the second is the whole.
  OverlapGap second_half;
  std::mt19937_64 again(5);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t p = again() % 3 == 0 ? 0 : again() % 70'000;
    const uint64_t d = again() % 4 == 0 ? p : again() % 70'000;
    if (i >= 1000) second_half.add(p, d);
  }
  first_half += second_half;
  CHECK(first_half == gap);
}

TEST_CASE("route ledger: observations are summed per worker, each refusal names why") {
  RouteLedger l = ledger();
  const std::string a = l.issue("gpu0", 48, 70, t0);
  const std::string b = l.issue("gpu1", 0, 30, t0);
  const std::string c = l.issue("someone-else", 16, 0, t0);
  CHECK(a == "abcdef0123456789-1");
  CHECK(c == "abcdef0123456789-3");
  CHECK(l.issued() == 3);

  RouteLedger::Observation seen = l.observe(a, "gpu0", 32, t0 + 1s);
  CHECK(seen.accepted);
  CHECK(seen.predicted == 48);
  CHECK(seen.worker == "gpu0");
  CHECK(l.observe(b, "", 16, t0).accepted);  // no worker named: not checked
  CHECK(l.observe(c, "", 20, t0).accepted);
  REQUIRE(l.gaps().size() == 3);  // gpu0, gpu1, then the candidates that are no worker
  CHECK(l.gaps()[0].predicted_tokens == 48);
  CHECK(l.gaps()[0].delivered_tokens == 32);
  CHECK(l.gaps()[0].overpredicted_tokens == 16);
  CHECK(l.gaps()[1].underpredicted_tokens == 16);
  CHECK(l.gaps()[2].observations == 1);
  CHECK(l.gaps()[2].underpredicted_tokens == 4);

  const auto refused = [&](std::string_view id, std::string_view worker, uint64_t hit,
                           Clock::time_point now, ObserveRefusal why, std::string_view message) {
    const RouteLedger::Observation o = l.observe(id, worker, hit, now);
    CHECK_FALSE(o.accepted);
    CHECK(o.refusal == why);
    CHECK(o.message == message);
  };
  refused(a, "gpu0", 32, t0, ObserveRefusal::kDuplicate,
          "route_id: abcdef0123456789-1 observed already");
  refused("abcdef0123456789-4", "", 0, t0, ObserveRefusal::kUnknown,
          "route_id: abcdef0123456789-4 was never issued by this router");
  refused("abcdef0123456789-0", "", 0, t0, ObserveRefusal::kUnknown,
          "route_id: abcdef0123456789-0 was never issued by this router");
  refused("0000000000000000-1", "", 0, t0, ObserveRefusal::kUnknown,
          "route_id: 0000000000000000-1 was issued by another router run (restarted?)");
  const std::string not_an_id =
      "route_id: not a route id (expected the \"route_id\" of a /route answer)";
  for (std::string_view junk :
       {"", "1", "abcdef0123456789-", "abcdef0123456789-x", "abcdef0123456789-1x",
        "ABCDEF0123456789-1", "abcdef012345678\"-1", "abcdef0123456789-99999999999999999999999",
        "abcdef0123456789--1", "-abcdef0123456789-1"}) {
    CAPTURE(junk);
    refused(junk, "", 0, t0, ObserveRefusal::kUnknown, not_an_id);
  }
  const std::string d = l.issue("gpu1", 16, 40, t0);
  refused(d, "gpu0", 16, t0, ObserveRefusal::kWrongWorker,
          fmt::format("worker: route {} chose gpu1", d));
  refused(d, "", 41, t0, ObserveRefusal::kTooLarge,
          "hit_tokens: 41 is more than the route's prompt of 40 tokens");
  refused(d, "", 16, t0 + 61s, ObserveRefusal::kExpired,
          fmt::format("route_id: {} is older than 60 s, forgotten", d));
  CHECK(l.observe(d, "gpu1", 40, t0 + 60s).accepted);  // refusals left it pending; 60 s is in time
  const std::string e = l.issue("someone-else", 0, 0, t0);
  refused(e, "gpu0", 0, t0, ObserveRefusal::kWrongWorker,
          fmt::format("worker: route {} chose a candidate that is no worker of this router", e));

  CHECK(l.refused(ObserveRefusal::kDuplicate) == 1);
  CHECK(l.refused(ObserveRefusal::kUnknown) == 13);
  CHECK(l.refused(ObserveRefusal::kWrongWorker) == 2);
  CHECK(l.refused(ObserveRefusal::kTooLarge) == 1);
  CHECK(l.refused(ObserveRefusal::kExpired) == 1);
  CHECK(l.refused(ObserveRefusal::kMalformed) == 0);
  l.refuse(ObserveRefusal::kMalformed);
  CHECK(l.refused(ObserveRefusal::kMalformed) == 1);
  CHECK(l.gaps()[1].observations == 2);
}

TEST_CASE("route ledger: a fixed ring, the oldest route forgotten first, whatever is issued") {
  RouteLedger l = ledger(4);
  std::vector<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.push_back(l.issue("gpu0", 16, 100, t0));
  CHECK(l.capacity() == 4);
  for (int i = 0; i < 996; ++i) {
    const RouteLedger::Observation o = l.observe(ids[static_cast<size_t>(i)], "", 16, t0);
    REQUIRE_FALSE(o.accepted);
    CHECK(o.refusal == ObserveRefusal::kExpired);
  }
  CHECK(l.observe(ids[995], "", 16, t0).message ==
        fmt::format("route_id: {} is older than the last 4 routes, forgotten", ids[995]));
  for (int i = 996; i < 1000; ++i)
    CHECK(l.observe(ids[static_cast<size_t>(i)], "", 16, t0).accepted);
  CHECK(l.gaps()[0].observations == 4);
  CHECK(l.gaps()[0].gap_tokens() == 0);
  CHECK_THROWS_AS(ledger(0), std::invalid_argument);
  CHECK_THROWS_AS(ledger(4, 0ms), std::invalid_argument);
}

TEST_CASE("router: POST /observe bodies, good ones and each bad one naming its field") {
  ObserveQuery q = parse_observe_request(R"({"route_id": "ab-1", "hit_tokens": 32})");
  CHECK(q.route_id == "ab-1");
  CHECK(q.hit_tokens == 32);
  CHECK(q.worker.empty());
  q = parse_observe_request(R"({"route_id": "ab-1", "hit_tokens": 0, "worker": "gpu0", "x": 1})");
  CHECK(q.worker == "gpu0");
  CHECK(nlohmann::json::parse(render_observation("ab-1", "gpu0", 48, 32)) ==
        nlohmann::json{{"route_id", "ab-1"},
                       {"worker", "gpu0"},
                       {"predicted_hit_tokens", 48},
                       {"hit_tokens", 32}});

  const std::pair<std::string, std::string> bad[] = {
      {R"([1])", "body: expected a JSON object"},
      {R"({"route_id": "ab-1"})", "hit_tokens: missing: give the tokens the engine reused"},
      {R"({"hit_tokens": 1})", "route_id: missing: give the route_id of the /route answer"},
      {R"({"route_id": 7, "hit_tokens": 1})", "route_id: expected a string, got 7"},
      {R"({"route_id": "", "hit_tokens": 1})", "route_id: not a route id (0 bytes)"},
      {R"({"route_id": ")" + std::string(65, 'a') + R"(", "hit_tokens": 1})",
       "route_id: not a route id (65 bytes)"},
      {R"({"route_id": "ab-1", "hit_tokens": -1})", "hit_tokens: expected an integer >= 0, got -1"},
      {R"({"route_id": "ab-1", "hit_tokens": 1.5})",
       "hit_tokens: expected an integer >= 0, got 1.5"},
      {R"({"route_id": "ab-1", "hit_tokens": 4294967296})",
       "hit_tokens: 4294967296 is larger than 4294967295"},
      {R"({"route_id": "ab-1", "hit_tokens": 1, "worker": ""})",
       "worker: empty: leave it out, or name the worker"},
      {R"({"route_id": "ab-1", "hit_tokens": 1, "worker": [1]})",
       "worker: expected a string, got an array"},
      {R"({"route_id": "ab-1", "hit_tokens": )" + std::string(20, '[') + "1" +
           std::string(20, ']') + "}",
       "body: nested deeper than 8 levels"},
  };
  for (const auto& [body, message] : bad) {
    CAPTURE(body);
    CHECK_THROWS_WITH_AS(parse_observe_request(body), message.c_str(), RouteRequestError);
  }
}
