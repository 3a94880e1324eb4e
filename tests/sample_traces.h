// The sample traces kept in the repository under data/traces (data/traces/README.md says where
// each comes from). They are part of every checkout, so a missing file fails the test that wants
// it instead of skipping it. Needs RADIXKV_SAMPLE_TRACES, set by tests/CMakeLists.txt.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <string_view>

namespace radixkv::testing {

// data/traces/<relative>, e.g. sample_trace("mooncake/synthetic_trace.jsonl").
inline std::filesystem::path sample_trace(std::string_view relative) {
  const std::filesystem::path path = std::filesystem::path(RADIXKV_SAMPLE_TRACES) / relative;
  REQUIRE_MESSAGE(std::filesystem::exists(path),
                  path.string() << " is missing: the sample traces belong in data/traces");
  return path;
}

}  // namespace radixkv::testing
