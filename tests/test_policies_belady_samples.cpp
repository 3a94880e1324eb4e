// belady >= every online policy on the shared samples (Mooncake, agentic-coding): a few seconds in
// a release build, minutes under sanitizers, hence labelled slow. Skipped when shared/traces is
// absent.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/test_policies_replay.h"

using radixkv::testing::check_bound;
using radixkv::tools::read_trace;

TEST_CASE("belady is never below any policy on the Mooncake and agentic samples") {
  const std::filesystem::path shared = RADIXKV_SHARED_TRACES;
  const auto mooncake = shared / "mooncake" / "synthetic_trace.jsonl";
  const auto agentic = shared / "agentic-coding" / "trace_0026.json";
  if (!std::filesystem::exists(mooncake) || !std::filesystem::exists(agentic)) {
    MESSAGE("shared traces not found under ", shared.string(), ": skipped");
    return;
  }
  check_bound(read_trace(mooncake.string(), {}), 16, {1u << 16, 1u << 18});
  check_bound(read_trace(agentic.string(), {}), 16, {64, 256, 1024});
}
