// Expositions read back by Python's prometheus_client (tests/prometheus_oracle.py --dump), for
// tests that compare the values with their own oracle: {"types": {family: type}, "samples":
// {"NAME{k=v,...}": value}}, labels sorted by name. Needs RADIXKV_DEBIAN_PYTHON and
// RADIXKV_TESTS_DIR defined for the test.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/child_process.h"

namespace radixkv::testing {

// Several at once: one Python start for all.
inline std::vector<nlohmann::json> read_expositions(const std::vector<std::string>& texts) {
  using namespace std::chrono_literals;
  static std::atomic<int> serial = 0;
  std::vector<std::string> argv = {
      RADIXKV_DEBIAN_PYTHON, std::string(RADIXKV_TESTS_DIR) + "/prometheus_oracle.py", "--dump"};
  for (const std::string& text : texts) {
    argv.push_back(scratch_path("exposition-" + std::to_string(serial++) + ".txt"));
    std::ofstream(argv.back()) << text;
  }
  ChildProcess oracle(argv);
  std::vector<nlohmann::json> parsed;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::optional<std::string> line = oracle.read_line(60s);
    if (!line) break;
    parsed.push_back(nlohmann::json::parse(*line));
  }
  REQUIRE_MESSAGE(oracle.wait(60s) == 0,
                  "prometheus_client could not parse one of " << texts.size() << " expositions");
  REQUIRE(parsed.size() == texts.size());
  return parsed;
}

inline nlohmann::json read_exposition(const std::string& text) {
  return read_expositions({text}).front();
}

// The value of sample `key` ("NAME{k=v,...}"); fails the test when it is not there.
inline double sample_value(const nlohmann::json& dump, const std::string& key) {
  const auto& samples = dump.at("samples");
  REQUIRE_MESSAGE(samples.contains(key), "no sample " << key);
  return samples.at(key).get<double>();
}

}  // namespace radixkv::testing
