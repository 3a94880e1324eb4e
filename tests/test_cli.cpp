// The radixkv command line: flags, exit statuses, reports, the sweep plot, and the real binary.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "eviction/policy_registry.h"
#include "radixkv/version.h"
#include "tests/cli_runs.h"
#include "tools/cli/cli.h"
#include "tools/trace/units.h"

namespace fs = std::filesystem;
using namespace radixkv::tools;

namespace {

using Run = radixkv::testing::CliRun;
const auto cli = radixkv::testing::run_cli;

// One scratch folder per test process, removed when the process ends.
const fs::path& scratch_dir() {
  struct Scratch {
    fs::path path = fs::temp_directory_path() / ("radixkv_cli_test_" + std::to_string(::getpid()));
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Scratch scratch;
  return scratch.path;
}

fs::path temp_file(const std::string& name, const std::string& text) {
  const fs::path& dir = scratch_dir();
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

const std::string kSmallTrace =
    "{\"radixkv_trace\": 1}\n"
    "{\"id\": 0, \"t\": 0, \"segs\": [[1, 64]], \"out\": 16}\n"
    "{\"id\": 1, \"t\": 1, \"parent\": 0, \"segs\": [[2, 32]]}\n";

}  // namespace

TEST_CASE("cli: bad flags exit 2 and name the flag") {
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{"replay", "--capacity-tokens", "lots"}, "--capacity-tokens"},
      {{"replay", "--capacity-tokens", "8"},
       "--capacity-tokens"},                                   // 8 tokens hold no 16-token page
      {{"replay", "--cache-bytes", "1KiB"}, "--cache-bytes"},  // below one page of KV
      {{"replay", "--cache-bytes", "12parsecs"}, "--cache-bytes"},
      {{"replay", "--capacity-tokens", "1e6", "--cache-bytes", "8GiB"}, "--capacity-tokens"},
      {{"replay", "--page-tokens", "0"}, "--page-tokens"},
      {{"replay", "--page-tokens", "1.5"}, "--page-tokens"},
      {{"replay", "--model", "gpt-9"}, "--model"},
      {{"replay", "--policy", "random"}, "--policy"},
      {{"replay", "--policy", "lru,lru"}, "--policy"},
      {{"replay", "--mode", "turbo"}, "--mode"},
      {{"replay", "--mode", "engine", "--sweep", "1e6,2e6"}, "--sweep: cache mode only"},
      {{"replay", "--format", "xml", "--trace", "x"}, "--format"},
      {{"replay", "--frobnicate"}, "--frobnicate"},
      {{"replay", "--trace"}, "--trace"},
      {{"replay", "--trace", "--json"}, "--trace: needs a value"},
      {{"replay", "--json", "--json"}, "--json"},
      {{"replay", "--sweep", "1e6,zero"}, "--sweep"},
      {{"replay", "--sweep", "1e6", "--capacity-tokens", "1e6"}, "--sweep"},
      {{"replay", "--plot", "x.svg"}, "--plot"},
      {{"gen", "--seed", "-1"}, "--seed"},
      {{"gen", "--rate", "0"}, "--rate"},
      {{"gen", "--turns", "uniform:3"}, "--turns"},
      {{"gen", "--priorities", "35,500"}, "--priorities"},
      {{"gen", "--priorities", "4294967331"}, "--priorities"},  // 2^32 + 35 must not wrap to 35
      {{"gen", "--system-prompts", "1e12"}, "--system-prompts"},
      {{"gen", "--agent-fraction", "2"}, "--agent-fraction"},
      {{"frobnicate"}, "unknown command"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Run run = cli(c.args);
    CHECK(run.status == kExitUsage);
    CHECK(run.err.find(c.names) != std::string::npos);
    CHECK(run.out.empty());
  }
}

TEST_CASE("cli: every command has --help") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"replay", "--help"}, {"gen", "--help"}}) {
    const Run run = cli(args);
    CHECK(run.status == kExitOk);
    CHECK(run.out.find("usage:") != std::string::npos);
  }
  CHECK(cli({"replay", "--help"}).out.find("--capacity-tokens") != std::string::npos);
}

TEST_CASE("cli: replay --help lists every registered policy with its parameters and defaults") {
  const std::string help = cli({"replay", "--help"}).out;
  for (const radixkv::PolicyInfo& policy : radixkv::policy_registry()) {
    CAPTURE(policy.name);
    CHECK(help.find("  " + std::string(policy.name) + " ") != std::string::npos);
    for (const radixkv::PolicyParameter& p : policy.parameters) {
      CHECK(help.find(std::string(p.key) + "=" + std::string(p.unit)) != std::string::npos);
    }
  }
  CHECK(help.find("protected=FRACTION") != std::string::npos);
  CHECK(help.find("[0.8]") != std::string::npos);
  CHECK(help.find("retention=SECONDS") != std::string::npos);
  CHECK(help.find("[inf]") != std::string::npos);
}

TEST_CASE("cli: --version prints the project's version") {
  const Run run = cli({"--version"});
  CHECK(run.status == kExitOk);
  CHECK(run.out == std::string("radixkv ") + RADIXKV_VERSION_STRING + "\n");
}

TEST_CASE("cli: a missing or malformed trace exits 1 with file and line") {
  Run run = cli({"replay", "--trace", "/nonexistent/trace.jsonl"});
  CHECK(run.status == kExitFailure);
  CHECK(run.err.find("/nonexistent/trace.jsonl") != std::string::npos);

  const fs::path bad =
      temp_file("bad.jsonl", kSmallTrace + "{\"id\": 2, \"t\": 2, \"segs\": [[3]]}\n" +
                                 "{\"id\": 3, \"t\": 3, \"segs\": [[3, 8]]}\n");
  run = cli({"replay", "--trace", bad.string()});
  CHECK(run.status == kExitFailure);
  CHECK(run.err.find(bad.string() + ":4:") != std::string::npos);
  CHECK(run.err.find("segs[0]") != std::string::npos);

  run = cli({"replay", "--trace", bad.string(), "--skip-bad", "--json"});
  CHECK(run.status == kExitOk);
  const nlohmann::json report = nlohmann::json::parse(run.out);
  CHECK(report["skipped_records"] == 1);
  CHECK(report["requests"] == 3);
}

TEST_CASE("cli: --json prints one object with the documented keys") {
  const fs::path trace = temp_file("small.jsonl", kSmallTrace);
  const Run run = cli({"replay", "--trace", trace.string(), "--page-tokens", "16", "--json"});
  REQUIRE(run.status == kExitOk);
  // parse() throws unless the whole output is one JSON value.
  const nlohmann::json report = nlohmann::json::parse(run.out);
  for (const char* key : {"hit_rate", "requests", "input_tokens", "hit_tokens", "evictions",
                          "pages_leaked", "wall_seconds", "peak_cached_bytes", "admit_us"}) {
    CAPTURE(key);
    CHECK(report.contains(key));
  }
  // Request 1 = request 0's 64 tokens + 16 answer tokens + 32: the 64 (4 pages of 16) hit.
  CHECK(report["requests"] == 2);
  CHECK(report["input_tokens"] == 64 + 112);
  CHECK(report["hit_tokens"] == 64);
  CHECK(report["pages_leaked"] == 0);
}

TEST_CASE("cli: capacity from bytes uses the model preset") {
  const fs::path trace = temp_file("small.jsonl", kSmallTrace);
  // llama-3-8b: 128 KiB per token, so 16 MiB = 128 tokens = 8 pages of 16.
  const Run run = cli({"replay", "--trace", trace.string(), "--cache-bytes", "16MiB", "--json"});
  REQUIRE(run.status == kExitOk);
  CHECK(nlohmann::json::parse(run.out)["capacity_pages"] == 8);
  const Run qwen = cli({"replay", "--trace", trace.string(), "--cache-bytes", "16MiB", "--model",
                        "qwen2.5-7b", "--json"});
  CHECK(nlohmann::json::parse(qwen.out)["capacity_tokens"] == 16 * 1024 / 56 / 16 * 16);
}

TEST_CASE("cli: --sweep prints a table and writes an SVG with one line per policy") {
  const fs::path trace = temp_file("small.jsonl", kSmallTrace);
  const fs::path plot = trace.parent_path() / "sweep.svg";
  fs::remove(plot);
  const Run run =
      cli({"replay", "--trace", trace.string(), "--sweep", "64,128,1e4", "--plot", plot.string()});
  REQUIRE(run.status == kExitOk);
  CHECK(run.out.find("hit rate") != std::string::npos);
  REQUIRE(fs::exists(plot));
  std::ifstream in(plot);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(svg.starts_with("<svg"));
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("<polyline") != std::string::npos);
  CHECK(svg.find("hit rate") != std::string::npos);

  const Run json = cli({"replay", "--trace", trace.string(), "--sweep", "64,1e4", "--plot",
                        plot.string(), "--json"});
  REQUIRE(json.status == kExitOk);
  CHECK(nlohmann::json::parse(json.out)["runs"].size() == 2);
}

TEST_CASE("cli: a --policy list keeps a policy's comma-separated parameters together") {
  const fs::path trace = temp_file("small.jsonl", kSmallTrace);
  const fs::path plot = trace.parent_path() / "sweep-params.svg";
  const Run run = cli({"replay", "--trace", trace.string(), "--sweep", "64,1e4", "--plot",
                       plot.string(), "--json", "--policy", "lru,reuse:limit=1,prior=8,fifo"});
  REQUIRE(run.status == kExitOk);
  const nlohmann::json report = nlohmann::json::parse(run.out);
  std::set<std::string> policies;
  for (const auto& r : report["runs"]) policies.insert(r["policy"].get<std::string>());
  CHECK(policies == std::set<std::string>{"lru", "reuse:limit=1,prior=8", "fifo"});
  // A bare key=value with no policy before it is still an error, naming the flag.
  const Run bad = cli({"replay", "--trace", trace.string(), "--policy", "prior=8"});
  CHECK(bad.status != kExitOk);
  CHECK(bad.err.find("--policy") != std::string::npos);
}

TEST_CASE("cli: gen writes the same file for the same seed") {
  const fs::path dir = temp_file("x", "").parent_path();
  REQUIRE(cli({"gen", "--conversations", "20", "--seed", "4", "--out", (dir / "a.jsonl").string()})
              .status == kExitOk);
  const Run stdout_run = cli({"gen", "--conversations", "20", "--seed", "4"});
  std::ifstream in(dir / "a.jsonl");
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(file == stdout_run.out);
  CHECK(!file.empty());
  // And replay reads it back, guessing the format.
  CHECK(cli({"replay", "--trace", (dir / "a.jsonl").string(), "--json"}).status == kExitOk);
}

TEST_CASE("cli: the built binary runs the default trace and exits non-zero on errors") {
  const std::string binary = RADIXKV_BINARY;
  // tests/cmake/tools.cmake builds the binary before this test.
  REQUIRE_MESSAGE(fs::exists(binary), binary << " is not built");
  auto status_of = [&](const std::string& args) {
    const int raw = std::system((binary + " " + args + " > /dev/null 2>&1").c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  };
  CHECK(status_of("replay --json") == 0);
  CHECK(status_of("replay --capacity-tokens nope") == 2);
  CHECK(status_of("replay --trace /nonexistent.jsonl") == 1);
}

TEST_CASE("cli: radixkv router runs the program beside it, and in process it is refused") {
  // In a process that runs the command line as a library (this test, the Python module), the
  // router would replace the process: refused, exit 2, naming the program that runs it.
  const Run refused = cli({"router", "--help"});
  CHECK(refused.status == kExitUsage);
  CHECK(refused.err.find("radixkv router: runs as a program of its own") != std::string::npos);
  // The binary replaces itself with radixkv-router, built beside it (tools/cli/CMakeLists.txt).
  const fs::path binary = RADIXKV_BINARY;
  REQUIRE_MESSAGE(fs::exists(binary.parent_path() / "radixkv-router"), "radixkv-router not built");
  const auto run = [](const std::string& command) {
    std::string out;
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
      out.append(buffer, n);
    const int raw = ::pclose(pipe);
    return std::pair(WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, out);
  };
  const auto [help_status, help] = run(binary.string() + " router --help");
  CHECK(help_status == kExitOk);
  CHECK(help.find("--worker") != std::string::npos);
  const auto [bad_status, bad] = run(binary.string() + " router --listen 127.0.0.1:0");
  CHECK(bad_status == kExitUsage);
  CHECK(bad.find("radixkv router: --worker is required") != std::string::npos);
  // A copy of radixkv without the router beside it says which program is missing, and exits 1.
  const fs::path alone = scratch_dir() / "alone";
  fs::create_directories(alone);
  fs::copy_file(binary, alone / "radixkv", fs::copy_options::overwrite_existing);
  const auto [missing_status, missing] = run((alone / "radixkv").string() + " router --help");
  CHECK(missing_status == kExitFailure);
  CHECK(missing.find("cannot run " + (alone / "radixkv-router").string()) != std::string::npos);
}

TEST_CASE("cli units: sizes with units, counts in plain or scientific notation") {
  CHECK(parse_size("512MiB") == 512ull << 20);
  CHECK(parse_size("8GiB") == 8ull << 30);
  CHECK(parse_size("1.5GiB") == 3ull << 29);
  CHECK(parse_size("40GB") == 40'000'000'000ull);
  CHECK(parse_size("4KB") == 4000);
  CHECK(parse_size("1e9") == 1'000'000'000ull);
  CHECK(parse_size("2TiB") == 2ull << 40);
  CHECK(parse_size("100B") == 100);
  for (const char* bad : {"", "GiB", "8 GiB", "8gib", "-1GiB", "eight", "1e30GiB", "16EiB"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_size(bad), UsageError);
    // The command line names the flag around the reason.
    const Run run = cli({"replay", "--cache-bytes", bad});
    CHECK(run.status == kExitUsage);
    CHECK(run.err.find("--cache-bytes") != std::string::npos);
  }
  CHECK(parse_count("3993") == 3993);
  CHECK(parse_count("1e6") == 1'000'000);
  CHECK(parse_count("2.5e3") == 2500);
  for (const char* bad : {"", "1.5", "-3", "0x10", "1e6k", "nan", "inf", "1e19"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_count(bad), UsageError);
    const Run run = cli({"replay", "--capacity-tokens", bad});
    CHECK(run.status == kExitUsage);
    CHECK(run.err.find("--capacity-tokens") != std::string::npos);
  }
  CHECK(has_byte_unit("8GiB"));
  CHECK(!has_byte_unit("1e6"));
}

TEST_CASE("cli: --json stays valid JSON for a trace path that is not UTF-8") {
  // A file name may hold any bytes but '/' and NUL; the report still has to parse.
  const fs::path trace = scratch_dir() / "caf\xe9-\xff.jsonl";
  fs::create_directories(scratch_dir());
  std::ofstream(trace) << kSmallTrace;
  const Run run = cli({"replay", "--trace", trace.string(), "--json"});
  REQUIRE(run.status == kExitOk);
  const nlohmann::json report = nlohmann::json::parse(run.out);  // throws on invalid UTF-8
  const std::string name = report["trace"];
  CHECK(name.ends_with("caf\xef\xbf\xbd-\xef\xbf\xbd.jsonl"));  // each stray byte is U+FFFD
  const Run sweep = cli({"replay", "--trace", trace.string(), "--json", "--sweep", "64,128",
                         "--plot", (scratch_dir() / "p.svg").string()});
  REQUIRE(sweep.status == kExitOk);
  CHECK(nlohmann::json::parse(sweep.out)["runs"].size() == 2);
}

TEST_CASE("cli: --trace - reads standard input, a pipe, or process substitution") {
  const fs::path trace = temp_file("stdin.jsonl", kSmallTrace);
  const std::string binary = RADIXKV_BINARY;
  const auto output_of = [](const std::string& command) {
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
    CHECK(::pclose(pipe) == 0);
    return out;
  };
  const std::string from_file = output_of(binary + " replay --json --trace " + trace.string());
  const auto hits = [](const std::string& json) {
    return nlohmann::json::parse(json)["hit_tokens"].get<uint64_t>();
  };
  REQUIRE(!from_file.empty());
  CHECK(hits(output_of(binary + " replay --json --trace - < " + trace.string())) ==
        hits(from_file));
  CHECK(hits(output_of("cat " + trace.string() + " | " + binary + " replay --json --trace -")) ==
        hits(from_file));
  CHECK(hits(output_of("bash -c '" + binary + " replay --json --trace <(cat " + trace.string() +
                       ")'")) == hits(from_file));
  // The format is guessed from standard input too, and errors name it.
  const std::string error =
      output_of("echo '{\"hello\": 1}' | " + binary + " replay --trace - 2>&1 >/dev/null; true");
  CHECK(error.find("standard input:1: cannot tell the trace format") != std::string::npos);
}

TEST_CASE("cli: --partial-reuse reports partial_hit_tokens, in text and JSON, in cache mode only") {
  // Request 1 shares request 0's first 40 tokens: 2 whole pages of 16, then 8 tokens of the
  // third, which partial reuse copies.
  const fs::path trace = temp_file("partial.jsonl",
                                   "{\"id\": 0, \"t\": 0, \"segs\": [[1, 64]]}\n"
                                   "{\"id\": 1, \"t\": 1, \"segs\": [[1, 40], [3, 24]]}\n");
  const std::vector<std::string> replay = {"replay", "--trace", trace.string(), "--page-tokens",
                                           "16"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = replay;
    args.insert(args.end(), more.begin(), more.end());
    return cli(args);
  };
  Run run = with({"--json"});
  REQUIRE(run.status == kExitOk);
  nlohmann::json report = nlohmann::json::parse(run.out);
  CHECK(report["hit_tokens"] == 32);
  CHECK_FALSE(report.contains("partial_hit_tokens"));
  run = with({"--json", "--partial-reuse"});
  REQUIRE(run.status == kExitOk);
  report = nlohmann::json::parse(run.out);
  CHECK(report["hit_tokens"] == 40);
  CHECK(report["partial_hit_tokens"] == 8);
  run = with({"--partial-reuse"});
  CHECK(run.out.find("partial hits       8 tokens") != std::string::npos);
  run = with({"--partial-reuse", "--mode", "engine"});
  CHECK(run.status == kExitUsage);
  CHECK(run.err.find("--partial-reuse: cache mode only") != std::string::npos);
}
