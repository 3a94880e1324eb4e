// The combination test's table (tests/combination_table.h) against the command line: its covering
// arrays hold every pair it allows, its policy row every policy `radixkv replay --help` lists, and
// the command line refuses exactly the pairs it says, saying why. No server needed (the runs
// against the invariants, which need Redis, are tests/test_combinations.cpp).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "tests/child_process.h"
#include "tests/combination_inputs.h"
#include "tests/combination_runs.h"
#include "tests/combination_table.h"

using namespace radixkv::testing;

namespace {

std::set<std::string> values_of(const Feature& feature) {
  std::set<std::string> names;
  for (const FeatureValue& v : feature.values) names.insert(v.name);
  return names;
}

}  // namespace

TEST_CASE("combinations: the covering array runs every pair the command line accepts, per mode") {
  const CombinationTable table = combination_table();
  const std::size_t n = table.features().size();
  for (RunMode mode : kRunModes) {
    CAPTURE(to_string(mode));
    const std::vector<Cell> cells = table.covering_array(mode);
    CHECK(cells == table.covering_array(mode));  // deterministic
    // Pairs held by some cell, against pairs a two-feature cell of the mode may hold.
    std::set<std::array<std::size_t, 4>> held, allowed;
    for (const Cell& cell : cells) {
      REQUIRE(cell.values.size() == n);
      CHECK(std::none_of(cell.values.begin(), cell.values.end(),
                         [](uint8_t v) { return v == kUnset; }));
      CHECK_MESSAGE(!table.refusal(cell), table.describe(cell));
      for (std::size_t f = 0; f < n; ++f) {
        for (std::size_t g = f + 1; g < n; ++g) held.insert({f, cell.values[f], g, cell.values[g]});
      }
    }
    for (std::size_t f = 0; f < n; ++f) {
      for (std::size_t g = f + 1; g < n; ++g) {
        for (uint8_t a = 0; a < table.features()[f].values.size(); ++a) {
          for (uint8_t b = 0; b < table.features()[g].values.size(); ++b) {
            Cell two = table.cell(mode);
            std::fill(two.values.begin(), two.values.end(), kUnset);
            two.values[f] = a;
            two.values[g] = b;
            if (!table.refusal(two)) allowed.insert({f, a, g, b});
          }
        }
      }
    }
    CHECK(held == allowed);
    MESSAGE(fmt::format("{} mode: {} cells cover {} pairs", to_string(mode), cells.size(),
                        allowed.size()));
  }
}

TEST_CASE("combinations: the policy row holds every policy `radixkv replay --help` lists") {
  const std::string text = replay_help();
  // "--policy NAME ... (default lru; known: lru, lfu, ..., and belady, the offline bound)"
  const std::size_t known = text.find("known: ", text.find("--policy NAME"));
  REQUIRE(known != std::string::npos);
  const std::string list =
      text.substr(known + 7, text.find(", the offline bound", known) - known - 7);
  std::set<std::string> listed;
  std::size_t at = 0;
  for (std::size_t comma; (comma = list.find(", ", at)) != std::string::npos; at = comma + 2) {
    listed.insert(list.substr(at, comma - at));
  }
  listed.insert(list.substr(list.find("and ", at) + 4));  // "and belady"
  const CombinationTable table = combination_table();
  CHECK(values_of(table.features()[table.feature("policy")]) == listed);
  CHECK(listed.size() >= 9);
}

TEST_CASE("combinations: the command line refuses exactly the pairs the table says, saying why") {
  const CombinationTable table = combination_table();
  // Refused before any server is asked: URLs that go nowhere do.
  const CombinationContext ctx =
      combination_context("redis://127.0.0.1:1", "redis+cluster://127.0.0.1:1");
  std::vector<std::pair<Cell, std::string>> refused;
  for (RunMode mode : kRunModes) {
    for (std::size_t f = 0; f < table.features().size(); ++f) {
      const Feature& feature = table.features()[f];
      for (const FeatureValue& v : feature.values) {
        const Cell cell = table.cell(mode, {{feature.name, v.name}});
        if (const auto why = table.refusal(cell)) refused.emplace_back(cell, *why);
      }
    }
    for (const PairRefusal& r : table.refusals()) {
      for (const std::string& a : r.a_values) {
        for (const std::string& b : r.b_values) {
          const Cell cell = table.cell(mode, {{r.a, a}, {r.b, b}});
          // A value the mode refuses alone is run above.
          if (!table.refusal(table.cell(mode, {{r.a, a}})) &&
              !table.refusal(table.cell(mode, {{r.b, b}}))) {
            refused.emplace_back(cell, r.message);
          }
        }
      }
    }
  }
  RunBatch batch(combination_binary(), scratch_path("refused"));
  std::vector<std::size_t> ids;
  for (const auto& [cell, why] : refused) ids.push_back(batch.add(command_line(table, cell, ctx)));
  batch.run(combination_jobs());
  for (std::size_t i = 0; i < refused.size(); ++i) {
    const RunOutput& run = batch.output(ids[i]);
    CAPTURE(table.describe(refused[i].first));
    CHECK(run.status == 2);
    CHECK_MESSAGE(run.log.find(refused[i].second) != std::string::npos, run.log);
  }
  CHECK(refused.size() >= 10);
}
