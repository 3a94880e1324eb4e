// Where the runs of the combination test (tests/test_combinations.cpp,
// tests/test_combination_table.cpp) find their inputs: the radixkv binary, how many run at once,
// and the workloads' traces, written once per test process.
#pragma once

#include <string>

#include "tests/combination_table.h"

namespace radixkv::testing {

// The radixkv the runs use: RADIXKV_COMBINATIONS_BINARY (an older build, to show that the table
// fails on the wiring issue 28 fixed; with LD_LIBRARY_PATH as that build needs), else this build's.
std::string combination_binary();
// Runs at once: RADIXKV_COMBINATIONS_JOBS, else the cores + 1.
unsigned combination_jobs();
// What `radixkv replay --help` prints (stderr included).
std::string replay_help();
// The workloads' traces (written on the first call), the servers' URLs, and whether the binary
// has --remote-wait-writes.
CombinationContext combination_context(std::string redis, std::string cluster);

}  // namespace radixkv::testing
