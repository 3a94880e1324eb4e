// The budget flags of `radixkv replay`: watermarks as fractions or sizes, checked and shown in the
// reports, and --config files (TOML) that give any of them, flags winning.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/cli_runs.h"

namespace fs = std::filesystem;
using namespace radixkv::tools;
using Json = nlohmann::json;

namespace {

using Run = radixkv::testing::CliRun;
const auto cli = radixkv::testing::run_cli;

Json json_of(const std::vector<std::string>& args) {
  std::vector<std::string> with_json = args;
  with_json.push_back("--json");
  const Run run = cli(with_json);
  INFO(run.err);
  REQUIRE(run.status == kExitOk);
  return Json::parse(run.out);
}

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("radixkv_budget_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

// llama-3-8b at 16 tokens a page: 2 MiB a page.
constexpr uint64_t kPage = 2ull << 20;

}  // namespace

TEST_CASE("watermarks: cache mode defaults to on-demand eviction, the same numbers as before") {
  const Json plain = json_of({"replay", "--capacity-tokens", "1e5"});
  CHECK(plain["high_watermark_pages"] == 6250);
  CHECK(plain["low_watermark_pages"] == 6250);
  CHECK(plain["high_watermark_bytes"] == 6250 * kPage);
  const Json explicit_ones = json_of(
      {"replay", "--capacity-tokens", "1e5", "--high-watermark", "1", "--low-watermark", "1.0"});
  for (const char* key : {"hit_tokens", "evictions", "inserted_pages", "peak_cached_pages"}) {
    CAPTURE(key);
    CHECK(plain[key] == explicit_ones[key]);
  }
  // The README's numbers for the built-in trace.
  const Json readme = json_of({"replay"});
  CHECK(readme["hit_tokens"] == 14'236'112);
  CHECK(readme["evictions"] == 104'043);
  // Lower watermarks evict in batches: more evictions, fewer hits, a lower peak after requests.
  const Json batched = json_of(
      {"replay", "--capacity-tokens", "1e5", "--high-watermark", "0.9", "--low-watermark", "0.5"});
  CHECK(batched["high_watermark_pages"] == 5625);
  CHECK(batched["low_watermark_pages"] == 3125);
  CHECK(batched["hit_tokens"].get<uint64_t>() < plain["hit_tokens"].get<uint64_t>());
}

TEST_CASE("watermarks: sizes become exactly their pages, fractions as CacheBudget counts them") {
  for (const char* mode : {"cache", "engine"}) {
    CAPTURE(mode);
    const std::string budget = std::string(mode) == "cache" ? "--cache-bytes" : "--pool-bytes";
    // 5000 pages; sizes of 1 to 5000 pages (and a byte less than a page more).
    for (uint64_t pages : {1ull, 7ull, 333ull, 2500ull, 4999ull, 5000ull}) {
      CAPTURE(pages);
      const Json r = json_of({"replay", "--mode", mode, budget, std::to_string(5000 * kPage) + "B",
                              "--high-watermark", std::to_string(pages * kPage + kPage - 1) + "B",
                              "--low-watermark", std::to_string(pages * kPage) + "B"});
      CHECK(r["capacity_pages"] == 5000);
      CHECK(r["high_watermark_pages"] == pages);
      CHECK(r["low_watermark_pages"] == pages);
    }
  }
  // Engine mode keeps the runtime's defaults, 0.95 and 0.85.
  const Json engine = json_of({"replay", "--mode", "engine", "--pool-bytes", "8GiB"});
  CHECK(engine["high_watermark_pages"] == 3891);  // floor(4096 * 0.95)
  CHECK(engine["low_watermark_pages"] == 3481);   // floor(4096 * 0.85)
  const Run text = cli({"replay", "--mode", "engine", "--pool-bytes", "8GiB", "--high-watermark",
                        "6GiB", "--low-watermark", "0.5"});
  REQUIRE(text.status == kExitOk);
  CHECK(
      text.out.find("watermarks         high 3,072 pages = 6.00 GiB, low 2,048 pages = 4.00 GiB") !=
      std::string::npos);
}

TEST_CASE("watermarks: refused unless low <= high <= budget, naming the flag") {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--high-watermark", "0.5", "--low-watermark", "0.6"},
       "--low-watermark: 0.6: low watermark 0.6 is above the high watermark 0.5"},
      {{"--high-watermark", "40GiB"},
       "--high-watermark: 40GiB: a watermark of 42949672960 bytes is 20480 pages, more than the "
       "budget of 16384 pages"},
      {{"--low-watermark", "1KiB"},
       "--low-watermark: 1KiB: low watermark of 1024 bytes is below one page"},
      {{"--high-watermark", "0"}, "--high-watermark: '0' is neither a fraction"},
      {{"--high-watermark", "1.5"}, "--high-watermark: '1.5' is neither a fraction"},
      {{"--high-watermark", "9e9"}, "--high-watermark: '9e9' is neither a fraction"},
      {{"--mode", "engine", "--pool-bytes", "8GiB", "--high-watermark", "0.8"}, ""},
      {{"--mode", "engine", "--pool-bytes", "8GiB", "--low-watermark", "0.97"},
       "--low-watermark: 0.97: low watermark 0.97 is above the high watermark 0.95"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"replay"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const Run run = cli(args);
    CAPTURE(c.message);
    CAPTURE(run.err);
    if (c.message.empty()) {  // a lower high watermark takes the low one down with it
      CHECK(run.status == kExitOk);
      continue;
    }
    CHECK(run.status == kExitUsage);
    CHECK(run.err.find(c.message) != std::string::npos);
  }
}

TEST_CASE("config: a TOML file gives the budget flags of each mode, flags winning") {
  const fs::path config = write_file("budget.toml", R"(# every mode
page-tokens = 16
model = "llama-3-8b"

[cache]
capacity-tokens = 1e5
high-watermark = 0.9
low-watermark = 0.8

[engine]
pool-bytes = "8GiB"
high-watermark = "6GiB"
max-running = 16
)");
  const Json cache = json_of({"replay", "--config", config.string()});
  CHECK(cache["mode"] == "cache");
  CHECK(cache["capacity_pages"] == 6250);
  CHECK(cache["high_watermark_pages"] == 5625);
  CHECK(cache["low_watermark_pages"] == 5000);
  // A budget on the command line overrides the file's, whatever its name; other keys still apply.
  const Json bytes = json_of({"replay", "--config", config.string(), "--cache-bytes", "1GiB"});
  CHECK(bytes["capacity_pages"] == 512);
  CHECK(bytes["high_watermark_pages"] == 460);  // floor(512 * 0.9)
  const Json flag_wins = json_of({"replay", "--config", config.string(), "--high-watermark", "1"});
  CHECK(flag_wins["high_watermark_pages"] == 6250);
  const Json engine = json_of({"replay", "--config", config.string(), "--mode", "engine"});
  CHECK(engine["capacity_pages"] == 4096);
  CHECK(engine["high_watermark_pages"] == 3072);
  CHECK(engine["low_watermark_pages"] == 3072);  // the default 0.85, lowered to high
  CHECK(engine["max_running"] == 16);
  // The mode may come from the file too; a top-level budget yields to the mode's table.
  const fs::path engine_file =
      write_file("engine.toml",
                 "mode = \"engine\"\ncache-bytes = \"2GiB\"\n[engine]\npool-bytes "
                 "= \"4GiB\"\n[cache]\nsweep = [1e4, 1e5]\n");
  const Json from_file = json_of({"replay", "--config", engine_file.string()});
  CHECK(from_file["mode"] == "engine");
  CHECK(from_file["capacity_pages"] == 2048);
  const Json sweep = json_of({"replay", "--config", engine_file.string(), "--mode", "cache",
                              "--plot", (engine_file.parent_path() / "p.svg").string()});
  CHECK(sweep["runs"].size() == 2);
}

TEST_CASE("config: mistakes name the file, the line and the key") {
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {"capacity-tokens = \"lots\"\n", ":1: --capacity-tokens: 'lots' is not a count"},
      {"\n\ncapacty-tokens = 5\n", ":3: capacty-tokens is not a setting of radixkv replay"},
      {"[cach]\npage-tokens = 4\n", ":1: unknown table [cach]"},
      {"[engine]\nmode = \"cache\"\n",
       ":2: mode is not a setting of radixkv replay inside a table"},
      {"page-tokens = \n", ":1:"},
      {"page-tokens = 1979-05-27\n", ":1: page-tokens must be a string, a number"},
      {"[cache]\n[cache.deep]\nx = 1\n", "is a table inside a table"},
      {"config = \"other.toml\"\n", ":1: config is not a setting"},
      {"pool-bytes = \"8GiB\"\n", "--pool-bytes (from --config "},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const fs::path path = write_file("bad.toml", c.text);
    const Run run = cli({"replay", "--config", path.string()});
    CHECK(run.status == kExitUsage);
    CHECK(run.err.find(c.message) != std::string::npos);
    CHECK(run.err.find(path.string()) != std::string::npos);
  }
  const Run missing = cli({"replay", "--config", "/nonexistent/radixkv.toml"});
  CHECK(missing.status == kExitUsage);
  CHECK(missing.err.find("--config: cannot read '/nonexistent/radixkv.toml'") != std::string::npos);
}
