// RADIXKV_SKIP: how a test case that cannot run here (no GPU, say) says so and leaves.
//
// doctest has no skip from inside a test case. RADIXKV_SKIP(reason) prints
// "[radixkv skipped] <test case>: <reason>" and returns from the test case body; the shared main
// (tests/test_main.cpp) counts the case as skipped, and a run whose every started case skipped,
// with no failure, exits with the code that ctest's SKIP_RETURN_CODE reports as "Skipped"
// (tests/CMakeLists.txt). `reason` is a stream expression: RADIXKV_SKIP("no device: " << why).
//
// Use it only in the test case's own body, outside any SUBCASE: the `return` leaves the function
// it is written in, and a helper that returned would let the case go on as if it ran.
#pragma once

#include <sstream>
#include <string>

namespace radixkv::testing {

// Prints the marker and marks the running test case skipped; throws std::logic_error outside a
// test case. Defined in tests/test_main.cpp.
void skip_current_test_case(const std::string& reason);

}  // namespace radixkv::testing

#define RADIXKV_SKIP(reason)                                               \
  do {                                                                     \
    std::ostringstream radixkv_skip_reason;                                \
    radixkv_skip_reason << reason;                                         \
    ::radixkv::testing::skip_current_test_case(radixkv_skip_reason.str()); \
    return;                                                                \
  } while (false)
