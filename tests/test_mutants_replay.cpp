// Tests that kill mutants of scripts/mutate.sh that no other test caught: the replay's reports
// (each figure under its own key and label).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "tools/replay/replay_report.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

// An engine-mode result whose figures all differ, so that a figure under the wrong key shows.
ReplayResult distinct_result() {
  ReplayResult r;
  r.mode = "engine";
  r.policy = "lfu";
  r.trace = "t.jsonl";
  r.model = "tiny";
  r.page_tokens = 16;
  r.capacity_pages = 1000;
  r.bytes_per_page = 4096;  // 256 bytes per token
  r.skipped_records = 3;
  r.requests = 17;
  r.input_tokens = 4000;
  r.hit_tokens = 1600;
  r.inserted_pages = 41;
  r.uncached_pages = 5;
  r.evicted_pages = 1234567;
  r.evicted_nodes = 7;
  r.peak_cached_pages = 900;
  r.final_cached_pages = 850;
  r.wall_seconds = 2.5;
  r.cache_seconds = 0.5;
  r.admit = {17, 1.0, 2.0, 3.0, 4.0, 1.5};
  r.finish = {17, 5.0, 6.0, 7.0, 8.0, 5.5};
  EngineResult& e = r.engine;
  e.schedule = "lpm";
  e.max_running = 8;
  e.chunk_tokens = 512;
  e.run.steps = 101;
  e.run.preemptions = 2;
  e.run.readmitted = 1;
  e.run.held = 4;
  e.run.finished = 17;
  e.run.prefill_tokens = 2400;
  e.run.output_tokens = 300;
  e.run.peak_running = 6;
  e.run.peak_waiting = 9;
  e.run.simulated_seconds = 30.0;
  e.run.ttft_p50_s = 0.1;
  e.run.ttft_p90_s = 0.2;
  e.run.ttft_p99_s = 0.3;
  e.run.ttft_mean_s = 0.15;
  e.run.ttft_max_s = 0.4;
  EngineRun plain = e.run;
  plain.cache = false;
  plain.ttft_p50_s = 1.1;
  plain.ttft_p90_s = 1.2;
  plain.ttft_p99_s = 1.3;
  plain.ttft_mean_s = 1.15;
  plain.ttft_max_s = 1.4;
  e.no_cache = plain;
  return r;
}

// The line of `text` that starts with `label` after the two-space indent.
std::string line_of(const std::string& text, const std::string& label) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("  " + label + " ", 0) == 0) return line;
  }
  return "(no line " + label + ")";
}

}  // namespace

TEST_CASE("report: every JSON key carries its own figure") {
  // Mutant report-json-evictions: the emptied leaves reported as evicted pages.
  const ReplayResult r = distinct_result();
  const nlohmann::json json = nlohmann::json::parse(format_report_json(r));
  const std::vector<std::pair<const char*, int64_t>> integers = {
      {"page_tokens", 16},
      {"capacity_pages", 1000},
      {"capacity_tokens", 16000},
      {"capacity_bytes", 4096000},
      {"requests", 17},
      {"input_tokens", 4000},
      {"hit_tokens", 1600},
      {"hit_bytes", 1600 * 256},
      {"inserted_pages", 41},
      {"uncached_pages", 5},
      {"evictions", 1234567},
      {"evicted_nodes", 7},
      {"peak_cached_pages", 900},
      {"peak_cached_bytes", 900 * 4096},
      {"final_cached_pages", 850},
      {"pages_leaked", 0},
      {"skipped_records", 3},
      {"steps", 101},
      {"preemptions", 2},
      {"readmitted", 1},
      {"held", 4},
      {"prefill_tokens", 2400},
      {"output_tokens", 300},
      {"peak_running", 6},
      {"peak_waiting", 9},
  };
  for (const auto& [key, value] : integers) {
    CAPTURE(key);
    REQUIRE(json.contains(key));
    CHECK(json.at(key).get<int64_t>() == value);
  }
  const std::vector<std::pair<const char*, double>> reals = {
      {"hit_rate", 0.4},           {"wall_seconds", 2.5},     {"cache_seconds", 0.5},
      {"ttft_p50_seconds", 0.1},   {"ttft_p90_seconds", 0.2}, {"ttft_p99_seconds", 0.3},
      {"ttft_mean_seconds", 0.15}, {"ttft_max_seconds", 0.4}, {"simulated_seconds", 30.0},
      {"requests_per_second", 6.8}};
  for (const auto& [key, value] : reals) {
    CAPTURE(key);
    REQUIRE(json.contains(key));
    CHECK(json.at(key).get<double>() == doctest::Approx(value));
  }
  REQUIRE(json.contains("no_cache"));
  CHECK(json.at("no_cache").at("ttft_p90_seconds").get<double>() == doctest::Approx(1.2));
  CHECK(json.at("no_cache").at("ttft_max_seconds").get<double>() == doctest::Approx(1.4));
  REQUIRE(json.contains("admit_us"));
  CHECK(json.at("admit_us").at("p90").get<double>() == doctest::Approx(2.0));
  CHECK(json.at("finish_us").at("p99").get<double>() == doctest::Approx(7.0));
}

TEST_CASE("report: the text groups digits by thousands and puts each figure on its line") {
  // Mutants report-digit-groups and engine-report-p90.
  CHECK(group_digits(0) == "0");
  CHECK(group_digits(999) == "999");
  CHECK(group_digits(1000) == "1,000");
  CHECK(group_digits(100000) == "100,000");
  CHECK(group_digits(1234567) == "1,234,567");
  CHECK(group_digits(61190000) == "61,190,000");

  const std::string text = format_report_text(distinct_result());
  CHECK(line_of(text, "evictions").find("1,234,567 pages (7 leaves emptied)") != std::string::npos);
  CHECK(line_of(text, "cache").find("16,000 tokens = 1,000 pages of 16 tokens") !=
        std::string::npos);
  CHECK(line_of(text, "admit latency").find("p50 1.0 us, p90 2.0 us, p99 3.0 us, max 4.0 us") !=
        std::string::npos);
  // The engine table: with the cache, then without it.
  const std::vector<std::pair<std::string, std::vector<std::string>>> rows = {
      {"TTFT p50", {"0.100 s", "1.100 s"}},
      {"TTFT p90", {"0.200 s", "1.200 s"}},
      {"TTFT p99", {"0.300 s", "1.300 s"}},
      {"TTFT mean", {"0.150 s", "1.150 s"}},
      {"prefill tokens computed", {"2,400", "2,400"}}};
  for (const auto& [label, values] : rows) {
    CAPTURE(label);
    const std::string line = line_of(text, label);
    CAPTURE(line);
    const std::size_t cached = line.find(" " + values[0]);
    REQUIRE(cached != std::string::npos);
    CHECK(line.find(" " + values[1], cached + values[0].size()) != std::string::npos);
  }
}
