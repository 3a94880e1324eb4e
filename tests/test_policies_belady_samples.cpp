// belady >= every online policy on the samples in data/traces (Mooncake, agentic-coding): a few
// seconds in a release build, minutes under sanitizers, hence labelled slow.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/sample_traces.h"
#include "tests/test_policies_replay.h"

using radixkv::testing::check_bound;
using radixkv::testing::sample_trace;
using radixkv::tools::read_trace;

TEST_CASE("belady is never below any policy on the Mooncake and agentic samples") {
  const auto mooncake = sample_trace("mooncake/synthetic_trace.jsonl");
  const auto agentic = sample_trace("agentic-coding/trace_0026.json");
  check_bound(read_trace(mooncake.string(), {}), 16, {1u << 16, 1u << 18});
  check_bound(read_trace(agentic.string(), {}), 16, {64, 256, 1024});
}
