// `radixkv replay --quota NS=MIN:MAX` (cache mode): a quota that never binds changes no figure and
// splits the report by tenant; a quiet tenant's min holds against a noisy one's flood, raising its
// hit rate; bad quotas are refused naming the flag, the entry and the reason; a config file gives
// them too.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli_runs.h"

namespace fs = std::filesystem;
using namespace radixkv::tools;
using Json = nlohmann::json;

namespace {

using Run = radixkv::testing::CliRun;
const auto cli = radixkv::testing::run_cli;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("radixkv_quota_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// A quiet tenant (ns 1: 2 chats of 8 turns after a shared 512-token system prompt, 152 pages in
// the end) and a noisy one (ns 2: three unique prompts of 1,500 tokens, 282 pages, between quiet
// turns, more than the cache of 256 pages), as scripts/two_tenants.py writes at a larger scale.
fs::path two_tenant_trace() {
  const fs::path path = scratch("two_tenants.jsonl");
  std::ofstream out(path);
  int id = 0, content = 1000;
  std::vector<int> last(2, -1);
  for (int turn = 0; turn < 8; ++turn) {
    for (int conv = 0; conv < 2; ++conv) {
      if (turn == 0) {
        out << "{\"id\":" << id << ",\"t\":" << id << ",\"ns\":1,\"segs\":[[1,512],[" << content
            << ",64]],\"out\":64}\n";
      } else {
        out << "{\"id\":" << id << ",\"t\":" << id << ",\"ns\":1,\"parent\":" << last[conv]
            << ",\"segs\":[[" << content << ",64]],\"out\":64}\n";
      }
      last[conv] = id++;
      ++content;
      for (int k = 0; k < 3; ++k) {
        out << "{\"id\":" << id << ",\"t\":" << id << ",\"ns\":2,\"segs\":[[" << content++
            << ",1500]],\"out\":16}\n";
        ++id;
      }
    }
  }
  return path;
}

Json replay(std::vector<std::string> args) {
  args.insert(args.begin(), {"replay", "--page-tokens", "16", "--capacity-tokens", "4096"});
  args.push_back("--json");
  const Run run = cli(args);
  INFO(run.err);
  REQUIRE(run.status == kExitOk);
  return Json::parse(run.out);
}

const Json& tenant(const Json& report, const Json& ns) {
  for (const Json& n : report["namespaces"]) {
    if (n["namespace"] == ns) return n;
  }
  FAIL("no namespace " << ns.dump() << " in the report");
  return report;
}

}  // namespace

TEST_CASE("quota: one that never binds changes no figure, and the report splits by tenant") {
  const std::string trace = two_tenant_trace().string();
  const Json plain = replay({"--trace", trace});
  CHECK_FALSE(plain.contains("namespaces"));
  // Namespace 1 with no floor and the whole budget as its cap: LRU inside, LRU's order between.
  const Json split = replay({"--trace", trace, "--quota", "1=0:1"});
  for (const char* key : {"hit_tokens", "evictions", "inserted_pages", "final_cached_pages"})
    CHECK(split[key] == plain[key]);
  REQUIRE(split["namespaces"].size() == 2);
  const Json& quiet = tenant(split, 1);
  const Json& others = tenant(split, nullptr);
  CHECK(quiet["requests"] == 16);
  CHECK(others["requests"] == 48);
  CHECK(quiet["hit_tokens"].get<uint64_t>() + others["hit_tokens"].get<uint64_t>() ==
        plain["hit_tokens"].get<uint64_t>());
  CHECK(quiet["final_cached_pages"].get<uint64_t>() +
            others["final_cached_pages"].get<uint64_t>() ==
        plain["final_cached_pages"].get<uint64_t>());
  CHECK(quiet["min_pages"] == 0);
  CHECK(quiet["max_pages"] == 256);
}

TEST_CASE("quota: a quiet tenant's min holds against a noisy tenant's flood") {
  const std::string trace = two_tenant_trace().string();
  const Json shared = replay({"--trace", trace, "--quota", "1=0:1"});
  const Json guarded = replay({"--trace", trace, "--quota", "1=0.5"});
  const Json& before = tenant(shared, 1);
  const Json& after = tenant(guarded, 1);
  CHECK(after["min_pages"] == 128);
  // Under LRU alone the flood pushes the quiet tenant below half the cache; with the quota the
  // fewest pages it held once it had reached its min is the min.
  REQUIRE(before["lowest_after_min"].is_number());
  CHECK(before["lowest_after_min"].get<uint64_t>() < 128);
  REQUIRE(after["lowest_after_min"].is_number());
  CHECK(after["lowest_after_min"].get<uint64_t>() >= 128);
  CHECK(after["hit_rate"].get<double>() > before["hit_rate"].get<double>());
  // The noisy tenant pays for it.
  CHECK(tenant(guarded, nullptr)["hit_tokens"].get<uint64_t>() <=
        tenant(shared, nullptr)["hit_tokens"].get<uint64_t>());
}

TEST_CASE("quota: bad quotas are refused naming the flag, the entry and the reason") {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--quota", "1"}, "--quota: '1' is not NS=MIN:MAX (no '=')"},
      {{"--quota", "x=0.1"}, "'x=0.1': the namespace 'x' is not a decimal integer"},
      {{"--quota", "1=:0.5"}, "'1=:0.5': no MIN after '='"},
      {{"--quota", "1=1.5"}, "'1=1.5': '1.5' is neither a fraction"},
      {{"--quota", "1=0.1:0"}, "--quota: quota: namespace 1: max 0 would keep nothing"},
      {{"--quota", "1=0.6:0.5"},
       "--quota: quota: namespace 1: min 0.6 (9830 pages) is above max 0.5 (8192 pages)"},
      {{"--quota", "1=0.6,2=0.6"},
       "--quota: quota: the mins add up to 19660 pages, more than "
       "the budget of 16384 pages"},
      {{"--quota", "1=0.1", "--quota", "1=0.2"}, "--quota: quota: namespace 1 has two quotas"},
      {{"--quota", "1=64GiB"}, "--quota: quota: namespace 1: min 68719476736 bytes is more than"},
      {{"--quota", "1=0.1", "--mode", "engine", "--pool-bytes", "8GiB"},
       "--quota: cache mode only"},
      {{"--quota", "1=0.1", "--policy", "belady"}, "--quota: not with --policy belady"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"replay"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const Run run = cli(args);
    CAPTURE(c.message);
    CAPTURE(run.err);
    CHECK(run.status == kExitUsage);
    CHECK(run.err.find(c.message) != std::string::npos);
  }
}

TEST_CASE("quota: a config file gives quotas as an array") {
  const std::string trace = two_tenant_trace().string();
  const fs::path config = scratch("quota.toml");
  std::ofstream(config) << "quota = [\"1=0.5\", \"2=0:0.25\"]\n";
  const Json from_file = replay({"--trace", trace, "--config", config.string()});
  const Json from_flags = replay({"--trace", trace, "--quota", "1=0.5", "--quota", "2=0:0.25"});
  REQUIRE(from_file["namespaces"].size() == 3);
  CHECK(from_file["namespaces"] == from_flags["namespaces"]);
  CHECK(tenant(from_file, 2)["max_pages"] == 64);
}
