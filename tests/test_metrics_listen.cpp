// `radixkv replay --mode engine --metrics-listen HOST:PORT` (issue 33): the running replay answers
// /metrics, read back by Python's prometheus_client, with counters that only grow; the scrape
// after its last request equals its JSON report; the endpoint refuses what it must (an address
// that is not loopback, a port in use, other paths and methods, a request head past its bound).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "metrics/prometheus.h"
#include "tests/cli_runs.h"
#include "tests/prometheus_dump.h"
#include "tests/redis_fixture.h"
#include "tests/skip.h"

using radixkv::testing::ChildProcess;
using radixkv::testing::read_expositions;
using radixkv::testing::run_cli;
using radixkv::testing::sample_value;
using namespace std::chrono_literals;

namespace {

const std::string kRadixkv = RADIXKV_BINARY;

// The sum of a family's samples over its label sets.
double family_sum(const nlohmann::json& dump, const std::string& name) {
  double sum = 0;
  for (const auto& [key, value] : dump.at("samples").items()) {
    if (key.starts_with(name + "{")) sum += value.get<double>();
  }
  return sum;
}

// The endpoint's port, from the line the replay writes first.
int endpoint_port(ChildProcess& replay) {
  const std::string prefix = "radixkv replay: metrics at http://127.0.0.1:";
  const std::optional<std::string> address = replay.read_line_starting(prefix, 30s);
  REQUIRE(address);
  return std::stoi(address->substr(prefix.size()));
}

// A replay of an 80-conversation trace in engine mode, serving its metrics, with `extra`
// arguments: its report, and its last exposition after the report followed by (parsed in one
// Python start) the first, a middle and the last distinct one scraped before it.
struct ListenRun {
  nlohmann::json report;
  std::vector<nlohmann::json> parsed;  // [0]: the last scrape
  std::size_t distinct = 0;            // expositions seen before the report
};

ListenRun listen_run(const std::vector<std::string>& extra) {
  const std::string trace = radixkv::testing::scratch_path("listen.jsonl");
  REQUIRE(ChildProcess({kRadixkv, "gen", "--conversations", "80", "--seed", "5", "--out", trace})
              .wait(60s) == 0);
  // stderr into stdout: its first line is the endpoint's address, the report comes last.
  std::vector<std::string> args = {"/bin/sh",
                                   "-c",
                                   "exec \"$0\" \"$@\" 2>&1",
                                   kRadixkv,
                                   "replay",
                                   "--mode",
                                   "engine",
                                   "--trace",
                                   trace,
                                   "--capacity-tokens",
                                   "50000",
                                   "--json",
                                   "--no-progress",
                                   "--metrics-listen",
                                   "127.0.0.1:0",
                                   "--metrics-linger",
                                   "60"};
  args.insert(args.end(), extra.begin(), extra.end());
  ChildProcess replay(args);
  httplib::Client http("127.0.0.1", endpoint_port(replay));
  http.set_read_timeout(10, 0);

  // Scrape until the report comes; keep the distinct expositions seen before it.
  std::vector<std::string> running;
  std::optional<std::string> report;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (!report && std::chrono::steady_clock::now() < deadline) {
    const httplib::Result response = http.Get("/metrics");
    REQUIRE(response);
    REQUIRE(response->status == 200);
    CHECK(response->get_header_value("Content-Type") == radixkv::metrics::kPrometheusContentType);
    if (running.empty() || running.back() != response->body) running.push_back(response->body);
    if (std::optional<std::string> line = replay.read_line(5ms); line && line->starts_with("{")) {
      report = std::move(line);
    }
  }
  REQUIRE(report);
  ListenRun run{nlohmann::json::parse(*report), {}, running.size()};
  const httplib::Result last = http.Get("/metrics");
  REQUIRE(last);
  REQUIRE(running.size() >= 2);
  run.parsed =
      read_expositions({last->body, running.front(), running[running.size() / 2], running.back()});
  replay.signal(SIGTERM);  // the linger would serve on for a minute
  CHECK(replay.wait(30s) == 128 + SIGTERM);
  return run;
}

// The last scrape against the report: the counters every run has.
void check_final_scrape(const nlohmann::json& m, const nlohmann::json& r) {
  // The report's run admitted every request once (no preemption), so the runtime's counters are
  // the report's figures.
  REQUIRE(r.at("preemptions") == 0);
  REQUIRE(r.at("accounting_ok") == true);
  const auto value = [&](const std::string& key) { return sample_value(m, key); };
  CHECK(value("radixkv_requests_total{}") == r.at("requests").get<double>());
  CHECK(value("radixkv_requests_finished_total{}") == r.at("requests").get<double>());
  CHECK(value("radixkv_prompt_tokens_total{}") == r.at("input_tokens").get<double>());
  CHECK(family_sum(m, "radixkv_hit_tokens_total") == r.at("hit_tokens").get<double>());
  CHECK(value("radixkv_prefill_tokens_total{}") == r.at("prefill_tokens").get<double>());
  CHECK(value("radixkv_pages_inserted_total{tier=device}") == r.at("inserted_pages").get<double>());
  CHECK(value("radixkv_pages_evicted_total{tier=device}") == r.at("evictions").get<double>());
  CHECK(r.at("evictions").get<uint64_t>() > 0);  // the cache was under pressure
  CHECK(value("radixkv_pool_capacity_bytes{tier=device}") == r.at("capacity_bytes").get<double>());
  CHECK(value("radixkv_cached_bytes{tier=device}") == r.at("final_cached_pages").get<double>() *
                                                          r.at("capacity_bytes").get<double>() /
                                                          r.at("capacity_pages").get<double>());
  CHECK(value("radixkv_live_sequences{}") == 0);
}

// While it ran: counters that only grow, and at least one scrape from the middle of the run.
void check_running_scrapes(const ListenRun& run) {
  const double requests = run.report.at("requests").get<double>();
  bool middle = false;
  double previous = 0;
  for (std::size_t i = 1; i < run.parsed.size(); ++i) {
    const nlohmann::json& seen = run.parsed[i];
    if (seen.at("samples").empty()) continue;  // before the first step
    const double admitted = sample_value(seen, "radixkv_requests_total{}");
    CHECK(admitted >= previous);
    CHECK(admitted <= requests);
    middle = middle || (admitted > 0 && admitted < requests);
    previous = admitted;
  }
  CHECK_MESSAGE(middle, run.distinct << " distinct scrapes, none from the middle of the run");
}

}  // namespace

TEST_CASE(
    "replay --metrics-listen: scraped while the engine runs, and the last scrape is the report") {
  const ListenRun run = listen_run({});
  const nlohmann::json& r = run.report;
  const nlohmann::json& m = run.parsed[0];
  check_final_scrape(m, r);
  const auto value = [&](const std::string& key) { return sample_value(m, key); };
  CHECK(value("radixkv_hit_tokens_total{tier=remote}") == 0);
  CHECK(m.at("samples").count("radixkv_hit_tokens_total{tier=disk}") == 0);  // no disk tier
  REQUIRE(r.at("mrc").size() == 6);
  for (const auto& point : r.at("mrc")) {
    const std::string label =
        "{multiple=" + radixkv::metrics::format_value(point.at("multiple").get<double>()) + "}";
    CHECK(value("radixkv_mrc_hit_ratio" + label) == point.at("hit_rate").get<double>());
    CHECK(value("radixkv_mrc_capacity_tokens" + label) ==
          point.at("capacity_tokens").get<double>());
  }
  check_running_scrapes(run);
}

// The disk tier writes in the background: the last scrape still equals the report, which counts
// every write complete (the replay drains the tier before rendering it).
TEST_CASE(
    "replay --metrics-listen with a disk tier: its counters in the last scrape are the report's") {
  const std::string dir = radixkv::testing::scratch_path("listen-disk");
  const ListenRun run = listen_run({"--disk-path", dir, "--disk-capacity-bytes", "1GiB"});
  const nlohmann::json& r = run.report;
  const nlohmann::json& m = run.parsed[0];
  check_final_scrape(m, r);
  const auto value = [&](const std::string& key) { return sample_value(m, key); };
  REQUIRE(r.at("disk_written_pages").get<uint64_t>() > 0);
  REQUIRE(r.at("disk_loaded_pages").get<uint64_t>() > 0);
  CHECK(value("radixkv_hit_tokens_total{tier=disk}") == r.at("disk_hit_tokens").get<double>());
  CHECK(value("radixkv_hit_tokens_total{tier=remote}") == 0);
  CHECK(value("radixkv_pages_loaded_total{tier=disk}") == r.at("disk_loaded_pages").get<double>());
  CHECK(value("radixkv_pages_written_total{tier=disk}") ==
        r.at("disk_written_pages").get<double>());
  CHECK(value("radixkv_pages_evicted_total{tier=disk}") == r.at("disk_evictions").get<double>());
  CHECK(value("radixkv_pool_capacity_bytes{tier=disk}") ==
        r.at("disk_capacity_bytes").get<double>());
  CHECK(value("radixkv_cached_bytes{tier=disk}") > 0);
  CHECK(value("radixkv_cached_bytes{tier=disk}") <= r.at("disk_capacity_bytes").get<double>());
  check_running_scrapes(run);
}

// The remote tier's writer is a thread of its own: the same, against the Redis of
// scripts/with-redis.sh (fails rather than skips under CI=true without one).
TEST_CASE(
    "replay --metrics-listen with a remote tier: its counters in the last scrape are the "
    "report's") {
  RADIXKV_NEED_REDIS();
  const ListenRun run = listen_run({"--remote", radixkv::testing::redis_url(), "--remote-prefix",
                                    "listen-" + std::to_string(::getpid())});
  const nlohmann::json& r = run.report;
  const nlohmann::json& m = run.parsed[0];
  check_final_scrape(m, r);
  const auto value = [&](const std::string& key) { return sample_value(m, key); };
  REQUIRE(r.at("remote_never_answered") == false);
  REQUIRE(r.at("remote_stored_pages").get<uint64_t>() > 0);
  CHECK(value("radixkv_hit_tokens_total{tier=remote}") == r.at("remote_hit_tokens").get<double>());
  CHECK(value("radixkv_pages_loaded_total{tier=remote}") ==
        r.at("remote_loaded_pages").get<double>());
  CHECK(value("radixkv_pages_written_total{tier=remote}") ==
        r.at("remote_stored_pages").get<double>());
  check_running_scrapes(run);
}

TEST_CASE("replay --metrics-listen: only loopback, only engine mode, a port in use is an error") {
  const auto refused = [](const std::vector<std::string>& extra, const std::string& names) {
    std::vector<std::string> args = {"replay", "--mode", "engine", "--no-progress"};
    args.insert(args.end(), extra.begin(), extra.end());
    const radixkv::testing::CliRun run = run_cli(args);
    CAPTURE(names);
    CHECK(run.status == radixkv::tools::kExitUsage);
    CHECK_MESSAGE(run.err.find(names) != std::string::npos, run.err);
  };
  refused({"--metrics-listen", "0.0.0.0:0"}, "0.0.0.0 is not a loopback address");
  refused({"--metrics-listen", "10.1.2.3:9100"}, "10.1.2.3 is not a loopback address");
  refused({"--metrics-listen", "example.com:9100"}, "'example.com' is not an IP address");
  refused({"--metrics-listen", "127.0.0.1:65536"}, "PORT must be a number in 0..65535");
  refused({"--metrics-listen", "9100"}, "expected HOST:PORT");
  refused({"--metrics-linger", "1"}, "--metrics-linger: needs --metrics-listen");
  const radixkv::testing::CliRun cache =
      run_cli({"replay", "--metrics-listen", "127.0.0.1:0", "--no-progress"});
  CHECK(cache.status == radixkv::tools::kExitUsage);
  CHECK(cache.err.find("--metrics-listen: engine mode only") != std::string::npos);
  httplib::Server taken;
  const int port = taken.bind_to_any_port("127.0.0.1");
  REQUIRE(port > 0);
  refused({"--metrics-listen", fmt::format("127.0.0.1:{}", port)}, "cannot listen there");
}

TEST_CASE("metrics endpoint: other paths and methods, and an oversized request head") {
  ChildProcess replay({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", kRadixkv, "replay", "--mode",
                       "engine", "--no-cache", "--json", "--no-progress", "--metrics-listen",
                       "127.0.0.1:0", "--metrics-linger", "60"});
  httplib::Client http("127.0.0.1", endpoint_port(replay));
  const httplib::Result missing = http.Get("/index");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  const httplib::Result post = http.Post("/metrics", "", "text/plain");
  REQUIRE(post);
  CHECK(post->status == 405);
  // A request with a body: refused unanswered, the connection closed.
  CHECK(!http.Post("/metrics", "x", "text/plain"));
  const httplib::Result head = http.Get("/metrics", {{"X-Big", std::string(16 * 1024, 'a')}});
  CHECK(!head);  // past the 8 KiB bound: closed, no answer
  const httplib::Result ok = http.Get("/metrics");
  REQUIRE(ok);  // and it still serves
  CHECK(ok->status == 200);
  replay.signal(SIGTERM);
  CHECK(replay.wait(30s) == 128 + SIGTERM);
}
