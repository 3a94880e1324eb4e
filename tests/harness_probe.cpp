// A probe for tests/check_harness.sh: a test executable with the shared main (test_main.cpp)
// whose cases pass, skip, and fail before skipping. Built twice; harness_probe_split adds a case
// whose name holds ';', which ctest's doctest discovery would split. Never discovered by ctest.
#include <doctest/doctest.h>

#include "tests/skip.h"

TEST_CASE("probe: passes") { CHECK(1 + 1 == 2); }

TEST_CASE("probe: skips") { RADIXKV_SKIP("always, reason " << 6 * 7); }

TEST_CASE("probe: fails, then skips") {
  CHECK(1 + 1 == 3);  // a failure must not turn into a skip
  RADIXKV_SKIP("too late to skip");
}

#if defined(RADIXKV_PROBE_SPLIT)
TEST_CASE("probe: split; here") { CHECK(true); }
#endif
