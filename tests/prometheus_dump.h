// An exposition read back by Python's prometheus_client (tests/prometheus_oracle.py --dump), for
// tests that compare the values with their own oracle: {"types": {family: type}, "samples":
// {"NAME{k=v,...}": value}}, labels sorted by name. Needs RADIXKV_DEBIAN_PYTHON and
// RADIXKV_TESTS_DIR defined for the test.
#pragma once

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>

#include "tests/child_process.h"

namespace radixkv::testing {

inline nlohmann::json read_exposition(const std::string& text) {
  using namespace std::chrono_literals;
  static std::atomic<int> serial = 0;
  const std::string path = scratch_path("exposition-" + std::to_string(serial++) + ".txt");
  std::ofstream(path) << text;
  ChildProcess oracle({RADIXKV_DEBIAN_PYTHON,
                       std::string(RADIXKV_TESTS_DIR) + "/prometheus_oracle.py", "--dump", path});
  const std::optional<std::string> line = oracle.read_line(60s);
  REQUIRE_MESSAGE(oracle.wait(60s) == 0, "prometheus_client could not parse:\n" << text);
  REQUIRE(line.has_value());
  return nlohmann::json::parse(*line);
}

// The value of sample `key` ("NAME{k=v,...}"); fails the test when it is not there.
inline double sample_value(const nlohmann::json& dump, const std::string& key) {
  const auto& samples = dump.at("samples");
  REQUIRE_MESSAGE(samples.contains(key), "no sample " << key);
  return samples.at(key).get<double>();
}

}  // namespace radixkv::testing
