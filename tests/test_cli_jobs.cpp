// `radixkv replay --jobs N`: the cells of a sweep run in parallel (tools/replay/parallel_cells.h)
// and print exactly what one job prints, in the same order.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/cli_runs.h"
#include "tools/replay/parallel_cells.h"

namespace fs = std::filesystem;
using namespace radixkv::tools;
using radixkv::testing::run_cli;

namespace {

// Drops what a clock measured (keys naming seconds, microseconds or a rate): the rest of a
// report is a function of the trace and the flags.
nlohmann::json without_timing(const nlohmann::json& j) {
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : j) out.push_back(without_timing(item));
    return out;
  }
  if (!j.is_object()) return j;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : j.items()) {
    const bool timing = key.find("seconds") != std::string::npos || key.ends_with("_us") ||
                        key.find("per_second") != std::string::npos;
    if (!timing) out[key] = without_timing(value);
  }
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("cli: --jobs N gives the sweep --jobs 1 gives, in the same order, plot included") {
  const fs::path dir =
      fs::temp_directory_path() / ("radixkv_jobs_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // The bundled trace; a policy with state of its own (gdsf's clock), a host tier sweep, and more
  // cells than jobs.
  const std::vector<std::string> sweep = {"replay",       "--json",   "--sweep",
                                          "2e4,6e4,2e5",  "--policy", "lru,gdsf",
                                          "--sweep-host", "0,1e5",    "--no-progress"};
  std::vector<nlohmann::json> reports;
  std::vector<std::string> plots;
  for (const char* jobs : {"1", "3", "16"}) {
    std::vector<std::string> args = sweep;
    const fs::path plot = dir / (std::string("plot-") + jobs + ".svg");
    args.insert(args.end(), {"--jobs", jobs, "--plot", plot.string()});
    const auto run = run_cli(args);
    CAPTURE(jobs);
    REQUIRE(run.status == 0);
    const nlohmann::json report = nlohmann::json::parse(run.out);
    REQUIRE(report["runs"].size() == 12);
    CHECK(report["runs"][0].contains("cache_seconds"));  // timing is there, and only it is dropped
    reports.push_back(without_timing(report));
    plots.push_back(read_file(plot));
  }
  CHECK(reports[0]["runs"][0]["hit_rate"].get<double>() > 0);
  CHECK(reports[1] == reports[0]);
  CHECK(reports[2] == reports[0]);
  CHECK(plots[1] == plots[0]);
  CHECK(plots[2] == plots[0]);
  // Belady: its index of next uses is built once and shared by its cells.
  const std::vector<std::string> belady = {
      "replay",        "--json",   "--sweep",
      "2e4,6e4,2e5",   "--policy", "lru,belady",
      "--no-progress", "--plot",   (dir / "belady.svg").string()};
  std::vector<nlohmann::json> bounds;
  for (const char* jobs : {"1", "4"}) {
    std::vector<std::string> args = belady;
    args.insert(args.end(), {"--jobs", jobs});
    const auto run = run_cli(args);
    REQUIRE(run.status == 0);
    bounds.push_back(without_timing(nlohmann::json::parse(run.out)));
  }
  CHECK(bounds[1] == bounds[0]);
  fs::remove_all(dir);
}

TEST_CASE("cli: --jobs is checked and is cache mode only") {
  const auto zero = run_cli({"replay", "--jobs", "0"});
  CHECK(zero.status == 2);
  CHECK(zero.err.find("--jobs") != std::string::npos);
  const auto engine = run_cli({"replay", "--mode", "engine", "--jobs", "2"});
  CHECK(engine.status == 2);
  CHECK(engine.err.find("--jobs: cache mode only") != std::string::npos);
}

TEST_CASE("run_cells: every cell once, and the first failure in cell order is rethrown") {
  for (const unsigned jobs : {1u, 2u, 7u, 64u}) {
    CAPTURE(jobs);
    std::vector<std::atomic<int>> calls(40);
    run_cells(calls.size(), jobs, [&](std::size_t i) { ++calls[i]; });
    for (const auto& c : calls) CHECK(c == 1);

    std::vector<std::atomic<int>> ran(40);
    try {
      run_cells(ran.size(), jobs, [&](std::size_t i) {
        ++ran[i];
        if (i == 31 || i == 12) throw std::runtime_error("cell " + std::to_string(i));
      });
      FAIL("nothing was rethrown");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "cell 12");
    }
    // A failure stops no other cell (one job runs them in order and stops at the first).
    if (jobs > 1) {
      for (const auto& c : ran) CHECK(c == 1);
    }
  }
}
