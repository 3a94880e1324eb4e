// The bad-input matrix: every flag of every radixkv command with a bad value, malformed traces of
// every kind in every format, and misuse of the runtime API. Each must give a clear error that
// names the input, a non-zero exit for the command line, and leave the structures intact.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <tuple>

#include "runtime/prefix_cache_runtime.h"
#include "runtime/runtime_internals.h"
#include "tests/cli_runs.h"
#include "tests/skip.h"
#include "tools/cli/cli.h"

namespace fs = std::filesystem;
using namespace radixkv;
using radixkv::tools::kExitFailure;
using radixkv::tools::kExitOk;
using radixkv::tools::kExitUsage;

namespace {

using Run = radixkv::testing::CliRun;
const auto cli = radixkv::testing::run_cli;

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
  const std::string bailian_ok =
      R"({"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 20, "output_length": 5, "type": "text", "turn": 1, "hash_ids": [1, 2]})"
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
      {"empty_bailian.jsonl", "bailian", "", "holds no request", 0},
      {"binary_bailian.jsonl", "bailian", binary, "invalid JSON", 0},
      {"truncated_bailian.jsonl", "bailian", bailian_ok + R"({"chat_id": 2, "timest)",
       "invalid JSON", 2},
      {"types_bailian.jsonl", "bailian",
       bailian_ok +
           R"({"chat_id": 2, "timestamp": 1, "input_length": 20, "output_length": 5, "turn": "2", "hash_ids": [1, 2]})"
           "\n",
       "\"turn\"", 2},
      {"negative_bailian.jsonl", "bailian",
       bailian_ok +
           R"({"chat_id": 2, "timestamp": -1, "input_length": 20, "output_length": 5, "hash_ids": [1, 2]})"
           "\n",
       "negative", 2},
      {"missing_bailian.jsonl", "bailian",
       bailian_ok + R"({"chat_id": 2, "timestamp": 1, "input_length": 20, "hash_ids": [1, 2]})"
                    "\n",
       "output_length", 2},
      {"twice_bailian.jsonl", "bailian",
       bailian_ok +
           R"({"chat_id": 2, "timestamp": 1, "timestamp": 2, "input_length": 20, "output_length": 5, "hash_ids": [1, 2]})"
           "\n",
       "appears twice", 2},
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

// ---- Issue 14's list: each input gets a clear one-line error, or works. ----

namespace {

bool one_line(const std::string& text) {
  return !text.empty() && text.find('\n') == text.size() - 1;
}

}  // namespace

TEST_CASE("issue 14.1: out of memory says what was being done and exits 1") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  RADIXKV_SKIP("a sanitizer reserves shadow memory that an address-space limit forbids");
#else
  // One request at the longest prompt a trace may hold, served in engine mode: its prompt alone is
  // 64 MiB of token ids, copied into the scheduler, more than a 200 MB address space holds.
  const fs::path trace = scratch("oom.jsonl", "{\"id\": 0, \"t\": 0, \"segs\": [[1, 16777216]]}\n");
  radixkv::testing::BinaryOptions options;
  options.memory_limit = 200ull << 20;
  const Run run = radixkv::testing::run_binary(
      {"replay", "--trace", trace.string(), "--mode", "engine", "--pool-bytes", "4TiB", "--json"},
      options);
  CHECK(run.status == kExitFailure);
  CHECK(run.err ==
        "radixkv replay: out of memory while replaying " + trace.string() + " in engine mode\n");
#endif
}

TEST_CASE("issue 14.2: a segment longer than any prompt is refused up front, naming the limit") {
  const fs::path trace = scratch("huge.jsonl", R"({"id":0,"t":0,"segs":[[1,1073741824]]})");
  const auto start = std::chrono::steady_clock::now();
  const Run run = cli({"replay", "--trace", trace.string()});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(run.status == kExitFailure);
  CHECK(one_line(run.err));
  CHECK(run.err.find(trace.string() + ":1: segs[0] length is 1073741824, outside [1, 16777216]") !=
        std::string::npos);
  // At the limit it replays, expanding no more of the prompt than the cache could hold.
  const Run at_limit =
      cli({"replay", "--trace",
           scratch("limit.jsonl", R"({"id":0,"t":0,"segs":[[1,16777216]]})").string(), "--json"});
  CHECK(at_limit.status == kExitOk);
}

TEST_CASE("issue 14.3: a capacity in bytes past 2^64 is refused, not wrapped") {
  const Run run = cli({"replay", "--page-tokens", "65536", "--capacity-tokens", "2e14", "--json"});
  CHECK(run.status == kExitUsage);
  CHECK(run.out.empty());
  CHECK(one_line(run.err));
  CHECK(run.err.find("--capacity-tokens: 200000000000000 tokens are 3051757812 pages of 8.00 GiB, "
                     "more than 2^64 bytes in all") != std::string::npos);
  // The largest budget that fits still reports exact bytes.
  const Run fits = cli({"replay", "--page-tokens", "65536", "--capacity-tokens", "1e14", "--json"});
  REQUIRE(fits.status == kExitOk);
  CHECK(fits.out.find("\"capacity_bytes\":13107199997852516352") != std::string::npos);
}

TEST_CASE("issue 14.4: engine mode serves requests in arrival order, not file order") {
  // The same four requests, written in time order and out of it.
  const std::string a = R"({"id": 0, "t": 0, "segs": [[1, 64]], "out": 8})";
  const std::string b = R"({"id": 1, "t": 5, "segs": [[2, 64]], "out": 8})";
  const std::string c = R"({"id": 2, "t": 1, "segs": [[3, 64]], "out": 8})";
  const std::string d = R"({"id": 3, "t": 2, "segs": [[1, 64], [4, 16]], "out": 8})";
  const fs::path sorted = scratch("sorted.jsonl", a + "\n" + c + "\n" + d + "\n" + b + "\n");
  const fs::path shuffled = scratch("shuffled.jsonl", a + "\n" + b + "\n" + c + "\n" + d + "\n");
  const auto replay = [](const fs::path& path) {
    const Run run = cli(
        {"replay", "--mode", "engine", "--trace", path.string(), "--pool-bytes", "1GiB", "--json"});
    REQUIRE(run.status == kExitOk);
    return run.out;
  };
  const std::string in_order = replay(sorted), out_of_order = replay(shuffled);
  CHECK(in_order.find("\"out_of_order_requests\":0,") != std::string::npos);
  CHECK(out_of_order.find("\"out_of_order_requests\":2,") != std::string::npos);
  for (const char* key : {"\"ttft_p50_seconds\":", "\"ttft_max_seconds\":", "\"hit_tokens\":"}) {
    CAPTURE(key);
    const auto value = [&](const std::string& json) {
      const std::size_t at = json.find(key) + std::strlen(key);
      return json.substr(at, json.find(',', at) - at);
    };
    CHECK(value(in_order) == value(out_of_order));
  }
}

TEST_CASE("issue 14.5: a byte order mark is skipped, and a bad first record is reported as it is") {
  const fs::path bom = scratch("bom.jsonl",
                               "\xEF\xBB\xBF{\"timestamp\": 0, \"input_length\": 600, "
                               "\"output_length\": 5, \"hash_ids\": [1, 2]}\n");
  CHECK(cli({"replay", "--trace", bom.string(), "--page-tokens", "512", "--json"}).status ==
        kExitOk);
  const fs::path bad = scratch("bad_first.jsonl",
                               "{\"timestamp\": 0, \"input_length\": 600 \"output_length\": 5}\n");
  const Run run = cli({"replay", "--trace", bad.string()});
  CHECK(run.status == kExitFailure);
  CHECK(one_line(run.err));
  CHECK(run.err.find(bad.string() + ":1: invalid JSON") != std::string::npos);
  CHECK(run.err.find("cannot tell") == std::string::npos);
}

TEST_CASE("issue 14.6: gen refuses what replay could not read, naming the flags") {
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{"gen", "--namespaces", "1e18"}, "--namespaces"},
      {{"gen", "--answer-tokens", "1e9", "--turns", "3"}, "--answer-tokens"},
      {{"gen", "--answer-tokens", "9e6", "--turns", "3"}, "--turns, --answer-tokens"},
      {{"gen", "--agent-fraction", "1", "--tool-tokens", "8e6"}, "--agent-steps, --tool-tokens"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.names);
    const Run run = cli(c.args);
    CHECK(run.status == kExitUsage);
    CHECK(run.out.empty());  // nothing written
    CHECK(one_line(run.err));
    CHECK(run.err.find(c.names) != std::string::npos);
  }
  // Right below the limits, what gen writes replay reads.
  const Run gen = cli({"gen", "--conversations", "3", "--answer-tokens", "1e6", "--turns", "4",
                       "--agent-fraction", "0", "--namespaces", "9007199254740992"});
  REQUIRE(gen.status == kExitOk);
  const fs::path trace = scratch("gen.jsonl", gen.out);
  CHECK(cli({"replay", "--trace", trace.string(), "--json"}).status == kExitOk);
}

TEST_CASE("issue 14.10: engine peak running counts requests that finish in the step they prefill") {
  // Three one-token answers arriving together: prefilled, sampled and finished in one step.
  const fs::path trace = scratch("one_step.jsonl",
                                 "{\"id\": 0, \"t\": 0, \"segs\": [[1, 32]], \"out\": 1}\n"
                                 "{\"id\": 1, \"t\": 0, \"segs\": [[2, 32]], \"out\": 1}\n"
                                 "{\"id\": 2, \"t\": 0, \"segs\": [[3, 32]], \"out\": 1}\n");
  const Run run = cli(
      {"replay", "--mode", "engine", "--trace", trace.string(), "--pool-bytes", "1GiB", "--json"});
  REQUIRE(run.status == kExitOk);
  CHECK(run.out.find("\"peak_running\":3,") != std::string::npos);
  CHECK(run.out.find("\"steps\":1,") != std::string::npos);
}

TEST_CASE("issue 14.11: one prefix, whole numbers, duplicate keys, gen --out -") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"replay", "stray"}, {"replay", "--frobnicate"}, {"gen", "x"}}) {
    const Run run = cli(args);
    CHECK(run.status == kExitUsage);
    CHECK(one_line(run.err));
    CHECK(run.err.starts_with("radixkv " + args[0] + ": "));
    CHECK(run.err.find("radixkv " + args[0] + ": radixkv") == std::string::npos);
  }
  const fs::path big = scratch(
      "big_int.jsonl",
      R"({"timestamp": 0, "input_length": 99999999999999999999, "output_length": 5, "hash_ids": [1]})");
  const Run whole = cli({"replay", "--trace", big.string()});
  CHECK(whole.err.find("\"input_length\" is 99999999999999999999, outside [1, 16777216]") !=
        std::string::npos);
  CHECK(whole.err.find("whole number") == std::string::npos);
  const fs::path twice = scratch(
      "twice.jsonl",
      R"({"timestamp": 0, "input_length": 600, "input_length": 6, "output_length": 5, "hash_ids": [1, 2]})");
  const Run duplicate = cli({"replay", "--trace", twice.string()});
  CHECK(duplicate.status == kExitFailure);
  CHECK(duplicate.err.find(twice.string() + ":1: the key \"input_length\" appears twice") !=
        std::string::npos);
  // gen --out - writes to standard output, and no file named "-".
  const fs::path cwd = fs::current_path();
  fs::current_path(scratch("x", "").parent_path());
  const Run dash = cli({"gen", "--conversations", "3", "--out", "-"});
  CHECK(!fs::exists("-"));
  fs::current_path(cwd);
  CHECK(dash.status == kExitOk);
  CHECK(dash.out == cli({"gen", "--conversations", "3"}).out);
  CHECK(dash.out.starts_with("{\"radixkv_trace\":1"));
}

TEST_CASE("issue 28: --config naming a folder is refused, not run with the defaults") {
  const fs::path folder = scratch("x", "").parent_path() / "config-folder";
  fs::create_directories(folder);
  const Run run = cli({"replay", "--config", folder.string()});
  CHECK(run.status == kExitUsage);
  CHECK(run.err.find(fmt::format("--config: '{}' is a directory, not a TOML file",
                                 folder.string())) != std::string::npos);
  CHECK(run.out.empty());  // nothing ran
}

TEST_CASE("issue 28: KV event endpoints are checked before the trace is read, naming the flag") {
  // A trace that does not exist: the endpoint's error comes first, so nothing was read.
  const std::vector<std::string> no_trace{"replay", "--trace", "/nonexistent-radixkv/t.jsonl"};
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = no_trace;
    args.insert(args.end(), extra.begin(), extra.end());
    return cli(args);
  };
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--kv-events", "tcp://256.1.1.1:5557"},
       "--kv-events: endpoint 'tcp://256.1.1.1:5557': '256.1.1.1' is not an IPv4 address (four "
       "numbers from 0 to 255, dot-separated)"},
      {{"--kv-events", "tcp://10.0.0.5"},
       "--kv-events: endpoint 'tcp://10.0.0.5': expected "
       "tcp://HOST:PORT"},
      {{"--kv-events", "tcp://127.0.0.1:0"},
       "--kv-events: endpoint 'tcp://127.0.0.1:0': port 0 (any free port) is for binding only"},
      {{"--kv-events", "tcp://*:5557", "--kv-events-replay", "tcp://127.0.0.1:70000"},
       "--kv-events-replay: endpoint 'tcp://127.0.0.1:70000': port '70000' is not a number from 1 "
       "to 65535"},
  };
  for (const auto& [extra, message] : cases) {
    CAPTURE(extra);
    const Run r = run(extra);
    CHECK(r.status == kExitUsage);
    CHECK_MESSAGE(r.err.find(message) != std::string::npos, r.err);
  }
}

TEST_CASE("issue 28: output paths are checked before the replay, naming the flag and why") {
  const fs::path file = scratch("a-file", "x");
  const fs::path folder = file.parent_path();
  const std::vector<std::string> no_trace{"replay", "--trace", "/nonexistent-radixkv/t.jsonl"};
  const std::vector<std::string> events{"--kv-events", "tcp://127.0.0.1:*", "--dump-pages"};
  const std::tuple<std::vector<std::string>, std::string, std::string> cases[] = {
      {events, "/nonexistent-radixkv/x.json", "the folder '/nonexistent-radixkv' does not exist"},
      {events, folder.string(), "it is a folder"},
      {events, (file / "x.json").string(), fmt::format("'{}' is not a folder", file.string())},
      {{"--sweep", "1e5", "--plot"},
       "/nonexistent-radixkv/p.svg",
       "the folder '/nonexistent-radixkv' does not exist"},
  };
  for (const auto& [flags, path, why] : cases) {
    std::vector<std::string> args = no_trace;
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(path);
    CAPTURE(args);
    const Run r = cli(args);
    CHECK(r.status == kExitUsage);
    const std::string message = fmt::format("{}: cannot write '{}': {}", flags.back(), path, why);
    CHECK_MESSAGE(r.err.find(message) != std::string::npos, r.err);
  }
  // A path that can be written passes, and nothing is created up front: the run goes on to read
  // the trace, which is missing.
  const fs::path dump = folder / "pages.json";
  fs::remove(dump);
  std::vector<std::string> args = no_trace;
  args.insert(args.end(), events.begin(), events.end());
  args.push_back(dump.string());
  const Run ok = cli(args);
  CHECK(ok.status == kExitFailure);
  CHECK(ok.err.find("/nonexistent-radixkv/t.jsonl") != std::string::npos);
  CHECK(ok.err.find("--dump-pages") == std::string::npos);
  CHECK_FALSE(fs::exists(dump));
}
