// `radixkv replay --jobs N`: the cells of a sweep run in parallel (tools/replay/parallel_cells.h)
// and print exactly what one job prints, in the same order.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
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

namespace {

// 0, 1, ..., n - 1: the cells in their own order.
std::vector<std::size_t> in_order(std::size_t n) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  return order;
}

}  // namespace

TEST_CASE("run_cells: every cell once, and the first failure in cell order is rethrown") {
  for (const unsigned jobs : {1u, 2u, 7u, 64u}) {
    CAPTURE(jobs);
    std::vector<std::atomic<int>> calls(40);
    run_cells(in_order(calls.size()), jobs, [&](std::size_t i) { ++calls[i]; });
    for (const auto& c : calls) CHECK(c == 1);

    // Run backwards: the rethrown failure is still the first in cell order, not the first to run.
    std::vector<std::size_t> backwards = in_order(40);
    std::reverse(backwards.begin(), backwards.end());
    std::vector<std::atomic<int>> ran(40);
    try {
      run_cells(backwards, jobs, [&](std::size_t i) {
        ++ran[i];
        if (i == 31 || i == 12) throw std::runtime_error("cell " + std::to_string(i));
      });
      FAIL("nothing was rethrown");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == (jobs > 1 ? "cell 12" : "cell 31"));
    }
    // A failure stops no other cell (one job runs them in order and stops at the first).
    for (std::size_t i = 0; i < ran.size(); ++i) CHECK(ran[i] == (jobs > 1 || i >= 31 ? 1 : 0));
  }
}

TEST_CASE("run_cells: threads take cells in the queue's order") {
  const std::vector<std::size_t> order = {5, 2, 7, 0, 1, 6, 3, 4};
  const auto place = [&](std::size_t cell) {
    return std::find(order.begin(), order.end(), cell) - order.begin();
  };
  for (const unsigned jobs : {1u, 2u, 3u}) {
    CAPTURE(jobs);
    std::mutex lock;
    std::map<std::thread::id, std::vector<std::size_t>>
        by_thread;  // cells, as each thread ran them
    run_cells(order, jobs, [&](std::size_t i) {
      const std::lock_guard guard(lock);
      by_thread[std::this_thread::get_id()].push_back(i);
    });
    // However the threads interleave, each takes the cells after those it took before.
    std::size_t total = 0;
    for (const auto& [thread, cells] : by_thread) {
      total += cells.size();
      for (std::size_t k = 1; k < cells.size(); ++k) CHECK(place(cells[k - 1]) < place(cells[k]));
    }
    CHECK(total == order.size());
    if (jobs == 1) CHECK(by_thread.begin()->second == order);
  }
}

TEST_CASE("longest_first: largest expected work first, equal work in cell order") {
  // The reference: a plain selection of the largest remaining, earliest index on ties.
  const auto reference = [](std::vector<uint64_t> work) {
    std::vector<std::size_t> order;
    std::vector<bool> taken(work.size(), false);
    for (std::size_t n = 0; n < work.size(); ++n) {
      std::size_t best = work.size();
      for (std::size_t i = 0; i < work.size(); ++i) {
        if (!taken[i] && (best == work.size() || work[i] > work[best])) best = i;
      }
      taken[best] = true;
      order.push_back(best);
    }
    return order;
  };
  CHECK(longest_first(std::vector<uint64_t>{}).empty());
  CHECK(longest_first(std::vector<uint64_t>{1, 3, 2}) == std::vector<std::size_t>{1, 2, 0});
  CHECK(longest_first(std::vector<uint64_t>{4, 9, 4, 9, 1}) ==
        std::vector<std::size_t>{1, 3, 0, 2, 4});
  uint64_t seed = 1;
  for (int round = 0; round < 200; ++round) {
    std::vector<uint64_t> work(1 + round % 13);
    for (uint64_t& w : work) w = (seed = seed * 6364136223846793005u + 1442695040888963407u) >> 61;
    CAPTURE(round);
    CHECK(longest_first(work) == reference(work));
  }
}
