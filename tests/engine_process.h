// tests/engine_publisher.py as a process: a serving engine's KV event publisher in one of the
// shapes real engines publish (vLLM, vLLM's older arrays, SGLang, vLLM with LMCache), driven line
// by line, which answers what it holds (the reference the router's answers are checked against).
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/child_process.h"

namespace radixkv::testing {

inline const std::string kDebianPython = RADIXKV_DEBIAN_PYTHON;

struct EngineProcess {
  // Runs tests/engine_publisher.py with `args` under Debian's Python.
  EngineProcess(std::string worker_name, std::vector<std::string> args)
      : name(std::move(worker_name)),
        process(
            [&] {
              std::vector<std::string> argv = {
                  kDebianPython, std::string(RADIXKV_TESTS_DIR) + "/engine_publisher.py"};
              argv.insert(argv.end(), args.begin(), args.end());
              return argv;
            }(),
            ChildStdin::kPipe) {
    const std::optional<std::string> line =
        process.read_line_starting("endpoints ", std::chrono::seconds(30));
    started = line.has_value();
    if (!started) return;
    std::istringstream words(*line);
    std::string word;
    words >> word >> pub >> replay;
  }
  std::string flag() const { return fmt::format("{}={},{}", name, pub, replay); }

  // One command, its one-line answer.
  std::string ask(const std::string& command) {
    REQUIRE(process.write_line(command));
    const std::optional<std::string> answer = process.read_line(std::chrono::seconds(60));
    REQUIRE_MESSAGE(answer, command.substr(0, 60));
    return *answer;
  }
  // The seq the next batch will have (the batches published so far).
  uint64_t cache(const nlohmann::json& prompt) { return seq_of(ask("cache " + prompt.dump())); }
  uint64_t steps(int n) { return seq_of(ask(fmt::format("steps {}", n))); }
  uint64_t clear() { return seq_of(ask("clear")); }
  // (tokens, weighted tokens) it holds of `query`.
  std::pair<double, double> overlap(const nlohmann::json& query) {
    std::istringstream words(ask("query " + query.dump()));
    std::string word;
    double tokens = -1, weighted = -1;
    words >> word >> tokens >> weighted;
    REQUIRE(word == "overlap");
    return {tokens, weighted};
  }
  std::optional<nlohmann::json> sample() {
    const std::string answer = ask("sample");
    if (answer == "none") return std::nullopt;
    return nlohmann::json::parse(answer);
  }
  void quit() {
    process.write_line("quit");
    CHECK(process.wait(std::chrono::seconds(20)) == 0);
  }

  static uint64_t seq_of(const std::string& answer) {
    REQUIRE_MESSAGE(answer.starts_with("ok "), answer);
    return std::stoull(answer.substr(3));
  }

  std::string name, pub, replay;
  ChildProcess process;
  bool started = false;
};

}  // namespace radixkv::testing
