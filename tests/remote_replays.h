// The two-process scenario of the remote tier's tests: the built radixkv binary replays with
// `args` (which name the remote tier) twice, one process after the other, against one store.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/child_process.h"
#include "tests/cli_runs.h"

namespace radixkv::testing {

// The --json reports of process A, then process B. A generous timeout (the machine running the
// tests may be busy), and a write queue that holds what the fast replay drops faster than one
// writer sends, so that neither run drops a write.
inline std::pair<nlohmann::json, nlohmann::json> replay_twice(std::vector<std::string> args) {
  args.insert(args.end(), {"--json", "--remote-timeout-ms", "2000", "--remote-queue-pages", "1e6"});
  std::vector<nlohmann::json> reports;
  for (const char* name : {"a.json", "b.json"}) {
    const CliRun run = run_binary(args, {.out = scratch_path(name), .err = ""});
    REQUIRE_MESSAGE(run.status == 0, run.err);
    reports.push_back(nlohmann::json::parse(run.out));
  }
  return {reports[0], reports[1]};
}

}  // namespace radixkv::testing
