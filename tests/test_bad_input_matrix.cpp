// The bad-input matrix: every flag of every radixkv command with a bad value, malformed traces of
// every kind in every format, and misuse of the runtime API. Each must give a clear error that
// names the input, a non-zero exit for the command line, and leave the structures intact.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "runtime/prefix_cache_runtime.h"
#include "runtime/runtime_internals.h"
#include "tools/cli/cli.h"

namespace fs = std::filesystem;
using namespace radixkv;
using radixkv::tools::kExitFailure;
using radixkv::tools::kExitOk;
using radixkv::tools::kExitUsage;

namespace {

struct Run {
  int status;
  std::string out, err;
};

Run cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = radixkv::tools::run_cli(args, out, err);
  return {status, out.str(), err.str()};
}

fs::path scratch(const std::string& name, const std::string& bytes) {
  const fs::path dir = fs::temp_directory_path() / ("radixkv_matrix_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
  return dir / name;
}

// Flags that take a value, read from the command's own --help, so a flag added later is covered
// without editing this test.
std::vector<std::string> value_flags(const std::string& command) {
  const Run help = cli({command, "--help"});
  REQUIRE(help.status == kExitOk);
  std::vector<std::string> flags;
  const std::regex line(R"(^\s+(--[a-z-]+) ([A-Z][A-Z,.]*))");
  std::istringstream lines(help.out);
  for (std::string text; std::getline(lines, text);) {
    std::smatch m;
    if (std::regex_search(text, m, line)) flags.push_back(m[1]);
  }
  return flags;
}

}  // namespace

TEST_CASE("matrix: every flag that takes a value refuses a bad one and names the flag") {
  for (const std::string command : {"replay", "gen"}) {
    const std::vector<std::string> flags = value_flags(command);
    CHECK(flags.size() >= 5);  // the parse found the help's flag table
    for (const std::string& flag : flags) {
      // Paths get a folder that does not exist; everything else gets a value no flag accepts.
      const bool is_path = flag == "--trace" || flag == "--out" || flag == "--plot";
      const std::string bad = is_path ? "/nonexistent-radixkv/@@/x" : "@@";
      std::vector<std::string> args{command, flag, bad};
      if (flag == "--plot") args.insert(args.end(), {"--sweep", "1e5"});
      CAPTURE(args);
      const Run run = cli(args);
      CHECK(run.status != kExitOk);
      CHECK((run.err.find(flag) != std::string::npos || run.err.find(bad) != std::string::npos));
      if (!is_path) CHECK(run.status == kExitUsage);
    }
  }
}

TEST_CASE("matrix: malformed traces in every format stop with the file, the line and the reason") {
  const std::string mooncake_ok =
      R"({"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [1, 2]})"
      "\n";
  const std::string native_ok =
      "{\"radixkv_trace\": 1}\n{\"id\": 0, \"t\": 0, \"segs\": [[1, 64]], \"out\": 16}\n";
  struct Case {
    std::string name, format, bytes, reason;
    int bad_line;  // JSONL: the line the error names (0 for whole-file errors); --skip-bad
                   // steps over such a line
  };
  std::string binary(256, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 37 + 11);
  const std::vector<Case> cases = {
      {"empty.jsonl", "mooncake", "", "holds no request", 0},
      {"empty_native.jsonl", "native", "", "", 0},
      {"empty.json", "agentic", "", "", 0},
      {"binary.jsonl", "mooncake", binary, "invalid JSON", 0},
      {"binary_native.jsonl", "native", binary, "invalid JSON", 0},
      {"binary.json", "agentic", binary, "invalid JSON", 0},
      {"truncated.jsonl", "mooncake", mooncake_ok + R"({"timestamp": 5, "input_len)",
       "invalid JSON", 2},
      {"truncated_native.jsonl", "native", native_ok + R"({"id": 1, "t": 1, "se)", "invalid JSON",
       3},
      {"truncated.json", "agentic", R"({"block_size": 64, "requests": [{"t": 0, "in": 10)",
       "invalid JSON", 0},
      {"types.jsonl", "mooncake",
       mooncake_ok +
           R"({"timestamp": 5, "input_length": "ten", "output_length": 1, "hash_ids": [1]})"
           "\n",
       "input_length", 2},
      {"types_native.jsonl", "native",
       native_ok + R"({"id": 1, "t": "soon", "segs": [[2, 8]]})"
                   "\n",
       "\"t\"", 3},
      {"types.json", "agentic",
       R"({"block_size": 64, "requests": [{"t": 0, "in": "many", "out": 1, "hash_ids": []}]})",
       "\"in\"", 0},
      {"negative.jsonl", "mooncake",
       mooncake_ok + R"({"timestamp": 5, "input_length": -10, "output_length": 1, "hash_ids": [1]})"
                     "\n",
       "-10", 2},
      {"negative_native.jsonl", "native",
       native_ok + R"({"id": 1, "t": 1, "segs": [[2, -8]]})"
                   "\n",
       "-8", 3},
      {"negative.json", "agentic",
       R"({"block_size": 64, "requests": [{"t": 0, "in": -5, "out": 1, "hash_ids": []}]})", "-5",
       0},
      {"missing.jsonl", "mooncake",
       mooncake_ok + R"({"timestamp": 5, "input_length": 10, "output_length": 1})"
                     "\n",
       "hash_ids", 2},
      {"missing_native.jsonl", "native",
       native_ok + R"({"id": 1, "t": 1})"
                   "\n",
       "", 3},
      {"missing.json", "agentic",
       R"({"block_size": 64, "requests": [{"t": 0, "in": 100, "out": 1}]})", "hash_ids", 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const fs::path path = scratch(c.name, c.bytes);
    for (const bool guess : {false, true}) {
      std::vector<std::string> args{"replay", "--trace", path.string(), "--json"};
      if (!guess) args.insert(args.end(), {"--format", c.format});
      CAPTURE(guess);
      const Run run = cli(args);
      CHECK(run.status == kExitFailure);
      CHECK(run.out.empty());  // no half-made report
      CHECK(run.err.find(path.string()) != std::string::npos);
      if (guess) continue;  // a guessed format may fail earlier, on the guess itself
      CHECK(run.err.find(c.reason) != std::string::npos);
      if (c.bad_line) {
        CHECK(run.err.find(path.string() + ":" + std::to_string(c.bad_line) + ":") !=
              std::string::npos);
      }
    }
    if (c.bad_line) {
      const Run skipped =
          cli({"replay", "--trace", path.string(), "--format", c.format, "--skip-bad", "--json"});
      CHECK(skipped.status == kExitOk);
      CHECK(skipped.out.find("\"skipped_records\":1") != std::string::npos);
    }
  }
}

TEST_CASE("matrix: runtime misuse is refused and leaves the cache intact") {
  PagePool pool(KvLayout{1, 1, 4, 2, 4}, 32);
  PrefixCacheRuntime runtime(pool);
  std::vector<TokenId> prompt(20);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<TokenId>(i);
  const AdmitResult first = runtime.admit({1, 0, prompt, kDefaultPriority});
  REQUIRE(first.ok());
  runtime.commit(first.seq, 20);
  runtime.finish(first.seq);
  const AdmitResult second = runtime.admit({2, 0, prompt, kDefaultPriority});
  REQUIRE(second.ok());
  CHECK(second.reused_tokens == 16);

  auto intact = [&] {
    runtime.tree().verify();
    runtime.check_accounting();
    CHECK(runtime.live_sequences() == 1);
    CHECK(runtime.view(second.seq).block_table.size() == 5);
  };
  // A double finish, a finish of a handle never issued, and use after finish.
  CHECK_THROWS_WITH_AS(runtime.finish(first.seq), doctest::Contains("finished"), std::logic_error);
  CHECK_THROWS_AS(runtime.abort(SeqHandle{7, 3}), std::logic_error);
  CHECK_THROWS_AS(runtime.append_token(first.seq, 5), std::logic_error);
  intact();
  // Computed counts beyond the tokens, an empty prompt, a priority outside 0..100.
  CHECK_THROWS_AS(runtime.commit(second.seq, 21), std::invalid_argument);
  CHECK_THROWS_AS(runtime.admit({3, 0, std::span<const TokenId>{}, kDefaultPriority}),
                  std::invalid_argument);
  CHECK_THROWS_AS(runtime.admit({4, 0, prompt, 101}), std::invalid_argument);
  intact();
  // Below the runtime: unlock below zero and foreign page ids, straight on its tree (which only
  // radixkv's own tests can reach).
  RadixTree& tree = detail::RuntimeInternals::tree(runtime);
  const MatchResult m = tree.match(5, prompt);  // another namespace: its root, never locked
  CHECK_THROWS_WITH_AS(tree.unlock(m.node), doctest::Contains("not locked"), std::logic_error);
  const std::vector<PageId> foreign{900, 901, 902, 903, 904};
  CHECK_THROWS_WITH_AS(tree.insert(6, prompt, foreign), doctest::Contains("not in the pool"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(pool.release(PageId{999}), doctest::Contains("not in this pool"),
                       std::logic_error);
  intact();
  runtime.finish(second.seq);
  CHECK(runtime.check_accounting() == 0);
}
