// The router as processes on loopback: `radixkv router` in front of two workers publishing their KV
// events, scripted ones (radixkv_event_script) and real `radixkv replay --kv-events` processes. Its
// index equals the union of the workers' final pages, a router restarted mid-stream catches up
// through replay, a worker that stops is dropped after the timeout, and /route sends a known
// prefix to the worker holding it.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/child_process.h"
#include "tests/event_script.h"
#include "tests/router_test_client.h"

using namespace radixkv;
using namespace std::chrono_literals;
using radixkv::testing::ChildProcess;
using radixkv::testing::eventually;
using radixkv::testing::MediumBlock;

namespace {

const std::string kRadixkv = RADIXKV_BINARY;
const std::string kScript = RADIXKV_EVENT_SCRIPT_BINARY;

struct WorkerProcess {
  WorkerProcess(std::string worker_name, std::vector<std::string> args)
      : name(std::move(worker_name)),
        truth_file(testing::scratch_path(name + "-truth.json")),
        process([&] {
          std::vector<std::string> argv = {kScript, "--truth", truth_file};
          argv.insert(argv.end(), args.begin(), args.end());
          return argv;
        }()) {
    const std::optional<std::string> line = process.read_line_starting("endpoints ", 30s);
    REQUIRE(line);
    std::istringstream words(*line);
    std::string word;
    words >> word >> pub >> replay;
  }
  std::string flag() const { return fmt::format("{}={},{}", name, pub, replay); }
  // Waits for "published N", then reads the pages it holds at the end.
  std::set<MediumBlock> final_pages() {
    REQUIRE(process.read_line_starting("published ", 60s));
    std::set<MediumBlock> pages;
    const nlohmann::json truth = nlohmann::json::parse(std::ifstream(truth_file));
    for (const auto& pair : truth)
      pages.emplace(pair[0].get<std::string>(), pair[1].get<uint64_t>());
    return pages;
  }

  std::string name, truth_file, pub, replay;
  ChildProcess process;
};

// `radixkv router` on a free loopback port.
struct RouterProcess : testing::RouterProcess {
  explicit RouterProcess(std::vector<std::string> args)
      : testing::RouterProcess(kRadixkv, std::move(args)) {}
};

std::vector<TokenId> iota_tokens(TokenId base, size_t n) {
  std::vector<TokenId> tokens(n);
  for (size_t i = 0; i < n; ++i) tokens[i] = base + static_cast<TokenId>(i);
  return tokens;
}

}  // namespace

TEST_CASE("router: processes: the index is the union of two workers' pages, across a restart") {
  // ~300 batches each, one every 5 ms: the router starts, is stopped and restarted mid-stream.
  WorkerProcess w0("w0", {"--seed", "11", "--steps", "300", "--interval-ms", "5", "--encoding",
                          "map", "--pin", "5000:4", "--linger-ms", "60000"});
  WorkerProcess w1("w1", {"--seed", "12", "--steps", "300", "--interval-ms", "5", "--encoding",
                          "array", "--pin", "7000:3", "--linger-ms", "60000"});
  const std::vector<std::string> workers = {"--worker", w0.flag(), "--worker", w1.flag()};
  {
    RouterProcess first(workers);
    REQUIRE(eventually([&] { return !first.index_of("w0").empty(); }));
    first.terminate();
  }
  std::this_thread::sleep_for(200ms);  // batches go by with no router listening
  RouterProcess router(workers);
  const std::set<MediumBlock> pages0 = w0.final_pages(), pages1 = w1.final_pages();
  CHECK(eventually([&] { return router.index_of("w0") == pages0; }));
  CHECK(eventually([&] { return router.index_of("w1") == pages1; }));
  CHECK(router.metric("radixkv_router_replay_requests_total{worker=\"w0\"}") >= 1);
  CHECK(router.metric("radixkv_router_gaps_unfilled_total{worker=\"w0\"}") == 0);

  nlohmann::json answer = router.route({{"tokens", iota_tokens(5000, 16)}, {"page_size", 4}});
  CHECK(answer["worker"] == "w0");
  CHECK(answer["candidates"][0]["overlap_blocks"] == 4);
  answer = router.route({{"tokens", iota_tokens(7000, 14)}, {"page_size", 4}});
  CHECK(answer["worker"] == "w1");
  CHECK(answer["candidates"][1]["overlap_blocks"] == 3);
  CHECK(answer["request_blocks"] == 3.5);
  // Nobody holds it: the load decides.
  answer = router.route(
      {{"tokens", iota_tokens(900000, 8)},
       {"page_size", 4},
       {"candidates", {{{"worker", "w0"}, {"load", 9}}, {{"worker", "w1"}, {"load", 2}}}}});
  CHECK(answer["worker"] == "w1");
  CHECK(answer["outcome"] == "no_overlap");
  CHECK(router.metric("radixkv_router_decisions_total{outcome=\"prefix_hit\"}") == 2);
  // The engine posts what it reused for that route: nothing predicted, 4 delivered.
  CHECK(answer["predicted_hit_tokens"] == 0);
  const auto observed = router.http->Post(
      "/observe", nlohmann::json{{"route_id", answer["route_id"]}, {"hit_tokens", 4}}.dump(),
      "application/json");
  REQUIRE(observed);
  CHECK_MESSAGE(observed->status == 200, observed->body);
  CHECK(router.metric("radixkv_router_overlap_underpredicted_tokens_total{worker=\"w1\"}") == 4);
  CHECK(router.http->Post("/observe", observed->body.substr(0, 5), "application/json")->status ==
        400);
  CHECK(router.metric("radixkv_router_observations_refused_total{reason=\"malformed\"}") == 1);
  router.terminate();
}

TEST_CASE("router: processes: a worker that stops is dropped after the timeout") {
  WorkerProcess w0("w0", {"--seed", "21", "--steps", "50", "--pin", "5000:4", "--stay"});
  WorkerProcess w1("w1", {"--seed", "22", "--steps", "50", "--pin", "7000:3", "--stay"});
  const std::set<MediumBlock> pages0 = w0.final_pages(), pages1 = w1.final_pages();
  RouterProcess router({"--worker", w0.flag(), "--worker", w1.flag(), "--worker-timeout", "0.5"});
  REQUIRE(eventually([&] { return router.index_of("w1") == pages1; }));
  REQUIRE(eventually([&] { return router.index_of("w0") == pages0; }));

  w1.process.signal(SIGKILL);
  REQUIRE(w1.process.wait(10s));
  CHECK(eventually([&] { return router.get_json("/healthz")["workers"][1]["state"] == "down"; },
                   10s));
  CHECK(router.index_of("w1").empty());
  CHECK(router.index_of("w0") == pages0);
  CHECK(router.metric("radixkv_router_worker_down_total{worker=\"w1\"}") == 1);
  CHECK(router.metric("radixkv_router_worker_up{worker=\"w1\"}") == 0);
  // Without candidates only the workers that are up are considered: w1's prefix goes to w0.
  const nlohmann::json answer = router.route({{"tokens", iota_tokens(7000, 12)}, {"page_size", 4}});
  CHECK(answer["worker"] == "w0");
  CHECK(answer["candidates"].size() == 1);
  router.terminate();
}

TEST_CASE("router: processes: bad flags exit 2 and name the flag") {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--worker", "w0"}, "--worker w0: expected NAME=PUB_ENDPOINT,REPLAY_ENDPOINT"},
      {{"--worker", "w0=tcp://127.0.0.1:1,tcp://127.0.0.1:2", "--listen", "127.0.0.1:70000"},
       "--listen 127.0.0.1:70000: expected HOST:PORT"},
      {{"--worker", "w0=tcp://127.0.0.1:1,tcp://127.0.0.1:2", "--worker-timeout", "0"},
       "--worker-timeout: expected seconds in [0.01, 86400]"},
      {{"--worker", "w0=tcp://127.0.0.1:1,tcp://127.0.0.1:2", "--worker",
        "w0=tcp://127.0.0.1:3,tcp://127.0.0.1:4"},
       "--worker: the name w0 is given twice"},
      {{"--worker", "w0=nonsense,tcp://127.0.0.1:2"},
       "--worker w0=nonsense,tcp://127.0.0.1:2: endpoint 'nonsense': expected TRANSPORT://"},
      {{"--worker", "w0=tcp://256.1.1.1:5557,tcp://127.0.0.1:2"},
       "endpoint 'tcp://256.1.1.1:5557': '256.1.1.1' is not an IPv4 address"},
      {{"--worker", "w0=tcp://127.0.0.1:1,tcp://127.0.0.1:2", "--max-pending-routes", "0"},
       "--max-pending-routes"},
      {{"--worker", "w0=tcp://127.0.0.1:1,tcp://127.0.0.1:2", "--route-ttl", "0"}, "--route-ttl"},
  };
  for (const auto& [args, names] : cases) {
    CAPTURE(names);
    // stderr to stdout, so that the test reads the message.
    std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", kRadixkv,
                                     "router"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess router(argv);
    const std::optional<std::string> line = router.read_line(10s);
    CHECK(router.wait(10s) == 2);
    REQUIRE(line);
    CHECK_MESSAGE(line->find(names) != std::string::npos, *line);
  }
  // A port in use.
  RouterProcess running({"--worker", "w0=tcp://127.0.0.1:1,tcp://127.0.0.1:2"});
  ChildProcess second({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", kRadixkv, "router", "--worker",
                       "w0=tcp://127.0.0.1:1,tcp://127.0.0.1:2", "--listen",
                       fmt::format("127.0.0.1:{}", running.port)});
  const std::optional<std::string> line = second.read_line(10s);
  CHECK(second.wait(10s) == 2);
  REQUIRE(line);
  CHECK(line->find("--listen: cannot listen on 127.0.0.1:") != std::string::npos);
  running.terminate();
}

namespace {

// A real `radixkv replay --mode engine` publishing its KV events on free loopback ports, lingering
// after its report so that a router can still fetch everything, and dumping its final pages.
struct ReplayWorker {
  ReplayWorker(std::string worker_name, const std::string& trace)
      : name(std::move(worker_name)),
        pages_file(testing::scratch_path(name + "-pages.json")),
        process({"/bin/sh",
                 "-c",
                 "exec \"$0\" \"$@\" 2>&1",
                 kRadixkv,
                 "replay",
                 "--mode",
                 "engine",
                 "--trace",
                 trace,
                 "--pool-bytes",
                 "6GiB",
                 "--json",
                 "--kv-events",
                 "tcp://127.0.0.1:*",
                 "--kv-events-replay",
                 "tcp://127.0.0.1:*",
                 "--kv-events-buffer",
                 "1e6",
                 "--kv-events-linger",
                 "300",
                 "--dump-pages",
                 pages_file}) {
    const std::optional<std::string> line =
        process.read_line_starting("radixkv replay: kv events on ", 60s);
    REQUIRE(line);
    // "radixkv replay: kv events on PUB, replay on REPLAY"
    const size_t on = line->find(" on ") + 4, comma = line->find(", replay on ");
    REQUIRE(comma != std::string::npos);
    pub = line->substr(on, comma - on);
    replay = line->substr(comma + 12);
  }
  std::string flag() const { return fmt::format("{}={},{}", name, pub, replay); }
  // Waits for the report, then reads the pages its cache held at the end.
  std::set<MediumBlock> final_pages() {
    const std::optional<std::string> report = process.read_line_starting("{", 120s);
    REQUIRE(report);
    CHECK(nlohmann::json::parse(*report)["kv_events_published"].get<uint64_t>() > 0);
    std::set<MediumBlock> pages;
    for (const auto& pair : nlohmann::json::parse(std::ifstream(pages_file))) {
      pages.emplace(pair[0].get<std::string>(), pair[1].get<uint64_t>());
    }
    return pages;
  }

  std::string name, pages_file, pub, replay;
  ChildProcess process;
};

std::string generated_trace(const std::string& name, const std::string& seed) {
  const std::string path = testing::scratch_path(name);
  ChildProcess gen({kRadixkv, "gen", "--conversations", "400", "--seed", seed, "--out", path});
  REQUIRE(gen.wait(60s) == 0);
  return path;
}

}  // namespace

TEST_CASE("router: processes: `radixkv router` in front of two publishing `radixkv replay`s") {
  const std::string trace0 = generated_trace("w0.jsonl", "3"),
                    trace1 = generated_trace("w1.jsonl", "4");
  ReplayWorker w0("w0", trace0), w1("w1", trace1);
  const std::vector<std::string> workers = {"--worker", w0.flag(),          "--worker",
                                            w1.flag(),  "--worker-timeout", "1"};
  {  // A router that hears part of the streams, then stops.
    RouterProcess first(workers);
    REQUIRE(eventually([&] { return !first.index_of("w0").empty(); }));
    first.terminate();
  }
  RouterProcess router(workers);  // catches up from seq 0 through the replay sockets
  const std::set<MediumBlock> pages0 = w0.final_pages(), pages1 = w1.final_pages();
  REQUIRE_FALSE(pages0.empty());
  // (No structured binding here: clang before 16 refuses to capture one in a lambda.)
  for (const std::pair<std::string, const std::set<MediumBlock>*> worker :
       {std::pair{"w0", &pages0}, std::pair{"w1", &pages1}}) {
    if (!eventually([&] { return router.index_of(worker.first) == *worker.second; }, 60s)) {
      FAIL_CHECK("the index of " << worker.first << " holds "
                                 << router.index_of(worker.first).size() << " pages, the worker "
                                 << worker.second->size() << "; metrics:\n"
                                 << router.get_text("/metrics"));
    }
  }
  CHECK(router.metric("radixkv_router_gaps_unfilled_total{worker=\"w0\"}") == 0);
  CHECK(router.metric("radixkv_router_gaps_unfilled_total{worker=\"w1\"}") == 0);

  // A block only w1 holds, and one only w0 holds: /route picks the holder.
  const auto only_in = [](const std::set<MediumBlock>& a, const std::set<MediumBlock>& b) {
    for (const MediumBlock& block : a) {
      if (!b.contains(block)) return block.second;
    }
    FAIL("no block of one worker that the other lacks");
    return uint64_t{0};
  };
  for (const auto& [holder, hash] :
       {std::pair{"w0", only_in(pages0, pages1)}, std::pair{"w1", only_in(pages1, pages0)}}) {
    CAPTURE(holder);
    const nlohmann::json answer = router.route({{"block_hashes", {hash}}});
    CHECK(answer["worker"] == holder);
    CHECK(answer["outcome"] == "prefix_hit");
  }

  // w1 stops (while it lingers): after the timeout the router drops it, and keeps w0.
  w1.process.signal(SIGTERM);
  REQUIRE(w1.process.wait(20s));
  CHECK(eventually([&] { return router.get_json("/healthz")["workers"][1]["state"] == "down"; },
                   20s));
  CHECK(router.index_of("w1").empty());
  CHECK(router.index_of("w0") == pages0);
  CHECK(router.route({{"block_hashes", {only_in(pages1, pages0)}}})["worker"] == "w0");
  router.terminate();
}
