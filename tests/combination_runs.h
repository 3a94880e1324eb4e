// Runs of the `radixkv` binary for the combination test (tests/test_combinations.cpp): many
// processes at once, each distinct command run once however many cells ask for it, and the KV
// events of a run fetched whole from its replay socket while it lingers.
//
// Nothing here asserts (the runs go on threads of their own); the test reads the outputs.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/event_script.h"

namespace radixkv::testing {

struct RunOutput {
  std::vector<std::string> args;  // as run: {prefix} and {scratch} filled
  // Its exit status; nullopt when it did not end in time. A run with KV events lingers for its
  // consumer and is stopped with SIGTERM once its stream is fetched: 128 + 15 there.
  std::optional<int> status;
  std::string log;        // what it printed besides the report (stderr included)
  nlohmann::json report;  // its --json report; null without one
  // With --kv-events: the payloads of its replay socket, batch 0 first, and why they are not the
  // whole stream (empty when they are: as many as the report's kv_events_published, no gap).
  std::vector<std::string> batches;
  std::string events_error;
  std::optional<std::set<MediumBlock>> dumped_pages;  // with --dump-pages
  double seconds = 0;
};

class RunBatch {
 public:
  // `binary`: the radixkv to run. `scratch`: a folder for the runs' files.
  RunBatch(std::string binary, std::string scratch);

  // The id of the run with these arguments (CombinationContext's placeholders filled but
  // {prefix} and {scratch}, which each run gets of its own); the same arguments, the same run.
  std::size_t add(const std::vector<std::string>& args);
  // Runs every run added and not run yet, `jobs` processes at once.
  void run(unsigned jobs);
  const RunOutput& output(std::size_t id) const { return outputs_.at(id); }
  std::size_t size() const { return outputs_.size(); }

 private:
  RunOutput run_one(std::size_t id) const;

  std::string binary_, scratch_;
  std::map<std::vector<std::string>, std::size_t> ids_;
  std::vector<std::vector<std::string>> args_;
  std::vector<RunOutput> outputs_;
  std::size_t done_ = 0;  // runs [0, done_) have run
};

}  // namespace radixkv::testing
