// The host tier in the replay and on the command line (docs/tiers.md, tools/replay/host_tier.h).
//
// Cache mode's oracle: an exclusive two-tier LRU hierarchy (write-back, LRU on both tiers) caches
// exactly what one LRU cache of both sizes caches when every request fits on the device and the
// host pool has room for one load beyond its budget (docs/tiers.md, "An exclusive LRU
// hierarchy"; the replay gives the host pool that room). So the replay with device D and host H
// must hit exactly what the one-tier replay at D + H hits (itself checked against a page-level
// model in test_replay_samples.cpp and test_replay_oracle.cpp), on every trace, request for
// request in total. Engine mode: the copy engine against a hand-worked schedule.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/cli_runs.h"
#include "tests/sample_traces.h"
#include "tests/small_traces.h"
#include "tools/cli/cli.h"
#include "tools/replay/cache_replay.h"
#include "tools/replay/engine_replay.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;
using radixkv::testing::sample_trace;
using Json = nlohmann::json;

namespace {

const auto cli = radixkv::testing::run_cli;

uint64_t largest_request_pages(const Trace& trace, uint32_t page_tokens) {
  uint64_t most = 0;
  for (const TraceRequest& r : trace.requests)
    most = std::max<uint64_t>(most, r.input_tokens / page_tokens);
  return most;
}

ReplayResult replay(const Trace& trace, uint32_t page_tokens, uint64_t device_pages,
                    uint64_t host_pages, const std::string& write_policy = "write_back") {
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 1, 2, page_tokens};
  config.capacity_pages = device_pages;
  config.host.capacity_pages = host_pages;
  config.host.write_policy = write_policy;
  const ReplayResult result = replay_cache(trace, config);
  REQUIRE_MESSAGE(result.ok(), result.accounting_error << ", " << result.pages_leaked << " leaked");
  return result;
}

struct OracleTotals {
  uint64_t runs = 0, host_hit_tokens = 0, host_evictions = 0;
};

// Two tiers at (D, H) against one tier at D + H, for devices from the largest request up.
void check_hierarchy(const Trace& trace, uint32_t page_tokens, OracleTotals& totals) {
  const uint64_t largest = std::max<uint64_t>(largest_request_pages(trace, page_tokens), 1);
  for (uint64_t extra_device : {0u, 2u, 17u}) {
    for (uint64_t host : {1u, 4u, 40u, 400u}) {
      const uint64_t device = largest + extra_device;
      CAPTURE(trace.source);
      CAPTURE(page_tokens);
      CAPTURE(device);
      CAPTURE(host);
      const ReplayResult two = replay(trace, page_tokens, device, host);
      const ReplayResult one = replay(trace, page_tokens, device + host, 0);
      CHECK(two.hit_tokens == one.hit_tokens);
      CHECK(two.host.device_hit_tokens + two.host.host_hit_tokens == two.hit_tokens);
      CHECK(two.inserted_pages == one.inserted_pages);
      // Write-back stores each page once: what the single cache holds, split over two tiers.
      CHECK(two.final_cached_pages + two.host.final_cached_pages == one.final_cached_pages);
      ++totals.runs;
      totals.host_hit_tokens += two.host.host_hit_tokens;
      totals.host_evictions += two.host.host_evictions;
    }
  }
}

// The hand-worked engine schedules: 512-token pages of 2048 bytes, prefill 1 s per 512 tokens,
// decode free, H2D 2 s per page and D2H 1 s per page; a host tier of 4 pages.
EngineReplayConfig hand_worked_engine(uint64_t pool_pages, double watermark) {
  EngineReplayConfig config;
  config.layout = KvLayout{1, 1, 1, 2, 512};
  config.pool_pages = pool_pages;
  config.high_watermark = config.low_watermark = watermark;
  config.schedule = "fcfs";
  config.cost = {1.0 / 512, 0.0, 0.0};
  config.host.capacity_pages = 4;
  config.host.d2h_gbps = 2048 / 1e9;
  config.host.h2d_gbps = 1024 / 1e9;
  return config;
}

// A Mooncake trace of 1025-token prompts (2 full pages and 1 token) with 1-token answers, one per
// (arrival second, first hash id): ids first, first + 1, first + 2.
Trace prompts_of_1025_tokens(std::initializer_list<std::pair<int, int>> requests) {
  std::string text;
  for (const auto& [second, id] : requests) {
    text += fmt::format(
        "{{\"timestamp\": {}, \"input_length\": 1025, \"output_length\": 1, \"hash_ids\": "
        "[{}, {}, {}]}}\n",
        second * 1000, id, id + 1, id + 2);
  }
  return parse_mooncake(text, "hand-worked");
}

std::vector<Trace> sample_traces() {
  std::vector<Trace> traces;
  traces.push_back(read_trace(sample_trace("mooncake/synthetic_trace.jsonl").string(), {}));
  traces.push_back(read_trace(sample_trace("agentic-coding").string(), {}));
  traces.push_back(read_trace(sample_trace("bailian-style/handwritten.jsonl").string(), {}));
  return traces;
}

}  // namespace

TEST_CASE("host tier: two-tier LRU in cache mode hits exactly what one LRU of both sizes hits") {
  OracleTotals totals;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    GenConfig config = radixkv::testing::small_gen_config(seed);
    config.conversations = 40;
    config.system_prompts = 4;
    config.namespaces = 1 + seed % 2;
    const Trace trace = radixkv::testing::generated_trace(config);
    for (uint32_t page_tokens : {1u, 4u}) check_hierarchy(trace, page_tokens, totals);
  }
  // The bundled samples, the Mooncake one cut to its first 600 requests (the whole one runs in
  // the Done-when case below).
  std::vector<Trace> samples = sample_traces();
  samples[0].requests.resize(600);
  check_hierarchy(samples[0], 512, totals);
  check_hierarchy(samples[1], 64, totals);
  check_hierarchy(samples[2], 16, totals);
  // The oracle was not idle: pages went to the host, came back and were evicted there.
  CHECK(totals.host_hit_tokens > 0);
  CHECK(totals.host_evictions > 0);
  MESSAGE(totals.runs, " two-tier replays equal to one tier; ", totals.host_hit_tokens,
          " tokens loaded from the host");
}

TEST_CASE("host tier: Mooncake at 512-token pages, device 1e6 + host 9e6 tokens = LRU at 1e7") {
  // Issue 15's Done-when: within 0.005 of plain LRU at 1e7 tokens. By the hierarchy argument it
  // is exactly equal (1953 + 17578 pages = 19531 pages = 1e7 tokens, cut to whole pages).
  const Trace trace = read_trace(sample_trace("mooncake/synthetic_trace.jsonl").string(), {});
  const KvLayout layout{1, 1, 1, 2, 512};
  const ReplayResult two = replay(trace, 512, 1'000'000 / 512, 9'000'000 / 512);
  const ReplayResult one = replay(trace, 512, 10'000'000 / 512, 0);
  const ReplayResult device = replay(trace, 512, 1'000'000 / 512, 0);
  CHECK(std::abs(two.hit_rate() - one.hit_rate()) <= 0.005);
  CHECK(two.hit_tokens == one.hit_tokens);
  // The host tier does the work: most hits come from it, and the device alone hits far less.
  CHECK(two.host.host_hit_tokens > two.host.device_hit_tokens);
  CHECK(device.hit_rate() + 0.3 < two.hit_rate());
  MESSAGE("device 1e6: ", device.hit_rate(), ", device 1e6 + host 9e6: ", two.hit_rate(), " (host ",
          two.host.host_hit_tokens, " tokens), one LRU at 1e7: ", one.hit_rate());
  (void)layout;
}

TEST_CASE("host tier: write-through copies every page it caches, selective only reused ones") {
  const Trace trace = radixkv::testing::random_block_trace(7, 200);
  const uint64_t device = largest_request_pages(trace, 512) + 3;
  const ReplayResult back = replay(trace, 512, device, 30, "write_back");
  const ReplayResult through = replay(trace, 512, device, 30, "write_through");
  const ReplayResult selective = replay(trace, 512, device, 30, "write_through_selective");
  // Write-through copies each page when it is cached (or skips it when the host is full of
  // copies of device pages, which it never evicts).
  CHECK(through.host.written_pages + through.host.skipped_writes == through.inserted_pages);
  CHECK(through.host.written_pages > 0);
  // Selective writes less than write-through; write-back only what the device evicts.
  CHECK(selective.host.written_pages < through.host.written_pages);
  CHECK(back.host.written_pages <= back.evicted_pages);
  CHECK(back.host.written_pages > 0);
  for (const ReplayResult* r : {&back, &through, &selective}) {
    CHECK(r->host.device_hit_tokens + r->host.host_hit_tokens == r->hit_tokens);
    CHECK(r->host.host_hit_tokens > 0);
    CHECK(r->host.loaded_pages * 512 == r->host.host_hit_tokens);
  }
  CHECK(through.host.write_policy == "write_through");
  CHECK(selective.host.write_policy == "write_through_selective:hits=2");
}

TEST_CASE("host tier: without one the report is exactly what it was") {
  // Numbers and keys of main before the host tier (commit 1ec4950), built-in trace, defaults.
  const radixkv::testing::CliRun run = cli({"replay", "--json"});
  REQUIRE(run.status == kExitOk);
  const Json j = Json::parse(run.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"accounting_error",
                                         "accounting_ok",
                                         "admit_us",
                                         "cache_seconds",
                                         "capacity_bytes",
                                         "capacity_pages",
                                         "capacity_tokens",
                                         "evicted_nodes",
                                         "evictions",
                                         "final_cached_pages",
                                         "finish_us",
                                         "high_watermark_bytes",
                                         "high_watermark_pages",
                                         "hit_bytes",
                                         "hit_rate",
                                         "hit_tokens",
                                         "input_tokens",
                                         "inserted_pages",
                                         "low_watermark_bytes",
                                         "low_watermark_pages",
                                         "mode",
                                         "model",
                                         "page_tokens",
                                         "pages_leaked",
                                         "peak_cached_bytes",
                                         "peak_cached_pages",
                                         "policy",
                                         "requests",
                                         "requests_per_second",
                                         "skipped_records",
                                         "trace",
                                         "uncached_pages",
                                         "wall_seconds"});
  const radixkv::testing::CliRun text = cli({"replay"});
  CHECK(text.out.find("host") == std::string::npos);
  const radixkv::testing::CliRun sweep =
      cli({"replay", "--sweep", "1e4,1e5", "--plot",
           (std::filesystem::temp_directory_path() / "radixkv_tiers_plain.svg").string()});
  CHECK(sweep.out.find("host") == std::string::npos);
}

TEST_CASE("host tier: the command line reports both tiers, in text and JSON") {
  const std::string trace = sample_trace("mooncake/synthetic_trace.jsonl").string();
  const std::vector<std::string> base = {"replay", "--trace",           trace, "--page-tokens",
                                         "512",    "--capacity-tokens", "1e6"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--host-capacity-tokens", "9e6", "--json"});
  const radixkv::testing::CliRun run = cli(args);
  REQUIRE(run.status == kExitOk);
  const Json j = Json::parse(run.out);
  const uint64_t device = j["device_hit_tokens"], host = j["host_hit_tokens"];
  CHECK(device + host == j["hit_tokens"].get<uint64_t>());
  CHECK(host > 0);
  CHECK(j["loaded_pages"].get<uint64_t>() * 512 == host);
  CHECK(j["written_pages"].get<uint64_t>() > 0);
  CHECK(j["host_evictions"].get<uint64_t>() >= 0);
  CHECK(j["host_tier"]["capacity_pages"] == 9'000'000 / 512);
  CHECK(j["host_tier"]["write_policy"] == "write_back");
  CHECK(j["host_tier"]["policy"] == "lru");
  // The same numbers through the library.
  const ReplayResult lib = replay(read_trace(trace, {}), 512, 1'000'000 / 512, 9'000'000 / 512);
  CHECK(lib.hit_tokens == j["hit_tokens"].get<uint64_t>());

  args = base;
  args.insert(args.end(), {"--host-cache-bytes", "1GiB", "--write-policy", "write_through",
                           "--host-policy", "lfu"});
  const radixkv::testing::CliRun text = cli(args);
  REQUIRE(text.status == kExitOk);
  CHECK(text.out.find("host tier") != std::string::npos);
  CHECK(text.out.find("policy lfu, write_through") != std::string::npos);
  CHECK(text.out.find("hits by tier") != std::string::npos);
  CHECK(text.out.find("pages loaded") != std::string::npos);
}

TEST_CASE("host tier: --sweep-host draws one line per host capacity") {
  const std::string trace = sample_trace("mooncake/synthetic_trace.jsonl").string();
  const std::string plot =
      (std::filesystem::temp_directory_path() / "radixkv_tiers_sweep.svg").string();
  const radixkv::testing::CliRun run =
      cli({"replay", "--trace", trace, "--page-tokens", "512", "--sweep", "1e6,2e6", "--sweep-host",
           "0,9e6", "--plot", plot, "--json"});
  REQUIRE(run.status == kExitOk);
  const Json j = Json::parse(run.out);
  REQUIRE(j["runs"].size() == 4);
  CHECK_FALSE(j["runs"][0].contains("host_tier"));
  CHECK(j["runs"][2]["host_tier"]["capacity_pages"] == 9'000'000 / 512);
  // Host 9e6 over device 1e6 is the 1e7 cache, above the device alone.
  CHECK(j["runs"][2]["hit_rate"].get<double>() > j["runs"][0]["hit_rate"].get<double>() + 0.3);
  std::ifstream file(plot);
  std::stringstream svg;
  svg << file.rdbuf();
  CHECK(svg.str().find("lru + host 8,999,936") != std::string::npos);
  const radixkv::testing::CliRun table =
      cli({"replay", "--trace", trace, "--page-tokens", "512", "--sweep", "1e6", "--sweep-host",
           "0,9e6", "--plot", plot});
  REQUIRE(table.status == kExitOk);
  CHECK(table.out.find("host tokens") != std::string::npos);
  CHECK(table.out.find("8,999,936") != std::string::npos);
}

TEST_CASE("host tier: bad flags are one-line errors naming the flag") {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--host-capacity-tokens", "1e6", "--host-cache-bytes", "1GiB"}, "give one host capacity"},
      {{"--write-policy", "write_back"}, "--write-policy: needs a host tier"},
      {{"--host-policy", "lru"}, "--host-policy: needs a host tier"},
      {{"--host-capacity-tokens", "1e6", "--write-policy", "write_sideways"}, "--write-policy"},
      {{"--host-capacity-tokens", "1e6", "--host-policy", "nonesuch"}, "--host-policy"},
      {{"--host-capacity-tokens", "0"}, "--host-capacity-tokens: "},
      {{"--host-capacity-tokens", "1e6", "--h2d-gbps", "10"}, "--h2d-gbps: engine mode only"},
      {{"--host-capacity-tokens", "1e6", "--h2d-gbps", "0"}, "--h2d-gbps"},
      {{"--sweep-host", "0,1e6"}, "--sweep-host: needs --sweep"},
      {{"--mode", "engine", "--sweep-host", "0,1e6"}, "--sweep-host: cache mode only"},
      {{"--host-capacity-tokens", "1e6", "--policy", "belady"}, "belady is not for a host tier"},
      {{"--mode", "engine", "--d2h-gbps", "5"}, "--d2h-gbps: needs a host tier"},
      {{"--mode", "engine", "--no-cache", "--host-cache-bytes", "1GiB"},
       "--host-cache-bytes: a host tier needs the cache"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"replay"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CAPTURE(args);
    const radixkv::testing::CliRun run = cli(args);
    CHECK(run.status == tools::kExitUsage);
    CHECK(run.err.find(c.says) != std::string::npos);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  }
}

TEST_CASE("host tier: --config gives the host flags, the command line winning") {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / "radixkv_tiers_config.toml";
  std::ofstream(file) << "host-capacity-tokens = 4e5\nwrite-policy = \"write_through\"\n";
  const radixkv::testing::CliRun from_file = cli({"replay", "--config", file.string(), "--json"});
  REQUIRE(from_file.status == kExitOk);
  const Json a = Json::parse(from_file.out);
  CHECK(a["host_tier"]["capacity_tokens"] == 400'000);
  CHECK(a["host_tier"]["write_policy"] == "write_through");
  // A host capacity on the command line replaces the file's (they are alternatives).
  const radixkv::testing::CliRun flag =
      cli({"replay", "--config", file.string(), "--host-cache-bytes", "1GiB", "--json"});
  REQUIRE(flag.status == kExitOk);
  const Json b = Json::parse(flag.out);
  CHECK(b["host_tier"]["capacity_bytes"] == 1ull << 30);
  CHECK(b["host_tier"]["write_policy"] == "write_through");
  std::filesystem::remove(file);
}

TEST_CASE("copy engine: each direction runs its copies in turn, overlapping compute") {
  CopyEngine copies(1000, /*h2d_gbps=*/1e-6, /*d2h_gbps=*/0.5e-6);  // 1 s and 2 s per page
  CHECK(copies.write(3.0, 0) == 3.0);                               // nothing to copy: no wait
  CHECK(copies.load(3.0, 0) == 3.0);
  CHECK(copies.write(3.0, 2) == 7.0);    // 2 pages x 2 s
  CHECK(copies.write(4.0, 1) == 9.0);    // behind the first batch
  CHECK(copies.load(7.0, 3) == 10.0);    // the H2D engine is free: 3 pages x 1 s from 7
  CHECK(copies.load(8.0, 1) == 11.0);    // behind it
  CHECK(copies.write(20.0, 1) == 22.0);  // idle engines start when asked
  CHECK(copies.load(25.0, 1) == 26.0);
}

TEST_CASE("engine mode: the host tier's copies delay only the request that waits for them") {
  // hand_worked_engine(): prefill 1 s per 512 tokens, decode free, D2H 1 s per page, H2D 2 s
  // per page, a host tier of 4 pages; here a device pool of 3 pages. Each request has 1025 prompt
  // tokens (2 full pages and 1 token) and a 1-token answer, so it finishes in the step that
  // prefills it and caches its 2 full pages.
  //   R0 at 0:  nothing cached. Prefill 1025 tokens: TTFT 1025/512 = 2.00195 s.
  //   R1 at 10: evicts R0's 2 pages to the host (write-back): D2H 10 -> 12; its prefill starts at
  //             12: TTFT 2 + 2.00195 = 4.00195 s.
  //   R2 at 20: R0's prompt again: its 2 pages are on the host. Room for them evicts R1's 2 pages:
  //             D2H 20 -> 22, then the load H2D 22 -> 26; prefill of 1 token: TTFT 6.00195 s.
  // Without the host tier R0's pages are gone by R2 and every request computes 1025 tokens.
  // R2 repeats R0's prompt; its last token is computed either way (the admit cut).
  const Trace trace = prompts_of_1025_tokens({{0, 1}, {10, 4}, {20, 1}});
  EngineReplayConfig config = hand_worked_engine(3, 1.0);
  const ReplayResult r = replay_engine(trace, config);
  REQUIRE(r.ok());
  const double prefill = 1025.0 / 512;
  CHECK(r.engine.run.ttft_max_s == doctest::Approx(6 + 1.0 / 512));
  CHECK(r.engine.run.ttft_p50_s == doctest::Approx(2 + prefill));
  CHECK(r.engine.run.ttft_mean_s == doctest::Approx((prefill + 2 + prefill + 6 + 1.0 / 512) / 3));
  CHECK(r.host.host_hit_tokens == 1024);
  CHECK(r.host.loaded_pages == 2);
  CHECK(r.host.written_pages == 4);
  REQUIRE(r.engine.device_only);
  CHECK(r.engine.device_only->ttft_max_s == doctest::Approx(prefill));
  CHECK(r.engine.device_only->ttft_mean_s == doctest::Approx(prefill));
  CHECK(r.engine.device_only->hit_tokens == 0);

  // Copies ten thousand times faster: the load costs almost nothing, and R2 computes one token.
  config.host.d2h_gbps *= 1e4;
  config.host.h2d_gbps *= 1e4;
  const ReplayResult fast = replay_engine(trace, config);
  CHECK(fast.engine.run.ttft_max_s == doctest::Approx(prefill + 2e-4).epsilon(1e-6));
  CHECK(fast.engine.run.ttft_p50_s < prefill + 0.001);
}

TEST_CASE("engine mode: requests that need no copy compute while another one loads") {
  // As above (1 s per 512 prefill tokens, H2D 2 s per page), but a pool of 8 pages whose
  // watermarks (0.25: 2 pages) send finished prompts to the host, so no admission waits for a
  // write-back:
  //   R0 at 0, R1 at 10: 1025 tokens each, TTFT 2.00195 s. R1's finish takes the cache past the
  //                      high watermark: R0's 2 pages go to the host.
  //   R2 at 20:          R0's prompt: it loads 2 pages, H2D 20 -> 24, then computes 1 token:
  //                      TTFT 4.00195 s.
  //   R3 at 20:          a new prompt, admitted in the same step: it computes at once, alone,
  //                      TTFT 2.00195 s.
  // Without the host tier R2 computes its whole prompt beside R3: one step of 2050 tokens,
  // TTFT 4.0039 s for both.
  const Trace trace = prompts_of_1025_tokens({{0, 1}, {10, 4}, {20, 1}, {20, 8}});
  const EngineReplayConfig config = hand_worked_engine(8, 0.25);
  const ReplayResult r = replay_engine(trace, config);
  REQUIRE(r.ok());
  const double prefill = 1025.0 / 512;
  // R1's, R3's and R2's finishes each send the 2 least recent pages to the host.
  CHECK(r.host.written_pages == 6);
  CHECK(r.host.loaded_pages == 2);
  CHECK(r.engine.run.ttft_max_s == doctest::Approx(4 + 1.0 / 512));
  CHECK(r.engine.run.ttft_p50_s == doctest::Approx(prefill));
  CHECK(r.engine.run.ttft_mean_s == doctest::Approx((3 * prefill + 4 + 1.0 / 512) / 4));
  REQUIRE(r.engine.device_only);
  CHECK(r.engine.device_only->ttft_max_s == doctest::Approx(2 * prefill));
  CHECK(r.engine.device_only->ttft_mean_s == doctest::Approx((2 * prefill + 2 * 2 * prefill) / 4));
}

TEST_CASE("engine mode: a host tier under memory pressure leaks nothing in either tier") {
  // A small pool, slow copies and every write policy: requests wait for loads, are preempted while
  // they wait, and are readmitted; the run must end with both identities and no page held.
  GenConfig gen = radixkv::testing::small_gen_config(5);
  gen.conversations = 60;
  gen.system_prompts = 3;
  const Trace trace = radixkv::testing::generated_trace(gen);
  uint64_t largest = 0;
  for (const TraceRequest& r : trace.requests) {
    largest = std::max(largest, Scheduler::pages_needed(r.input_tokens, r.output_tokens, 4));
  }
  uint64_t preempted = 0, loaded = 0;
  for (const char* write_policy : {"write_back", "write_through", "write_through_selective"}) {
    EngineReplayConfig config;
    config.layout = KvLayout{1, 1, 1, 2, 4};
    config.pool_pages = largest + 8;  // the largest request fits, with little room beside it
    config.schedule = "lpm";
    config.scheduler.max_running = 8;
    config.host.capacity_pages = 60;
    config.host.write_policy = write_policy;
    config.host.h2d_gbps = config.host.d2h_gbps = 1e-6;  // 16 ms per 16-byte page
    CAPTURE(write_policy);
    const ReplayResult r = replay_engine(trace, config);
    CHECK_MESSAGE(r.ok(), r.accounting_error << ", " << r.pages_leaked << " leaked");
    CHECK(r.engine.run.finished == trace.requests.size());
    CHECK(r.host.device_hit_tokens + r.host.host_hit_tokens == r.engine.run.hit_tokens);
    preempted += r.engine.run.preemptions;
    loaded += r.host.loaded_pages;
  }
  CHECK(loaded > 0);
  CHECK(preempted > 0);
  MESSAGE(preempted, " preemptions, ", loaded, " pages loaded");
}

TEST_CASE("engine mode: a request whose device hits are still loading waits for that load") {
  // The second schedule above with R3 asking R0's prompt again, at 20 like R2: R2's load makes
  // R0's pages device pages of the trie at once, so R3 hits them on the device, but their bytes
  // arrive only at 24. Both compute their last token in the step at 24: 2 tokens, TTFT
  // 4 + 2/512 s each.
  const Trace trace = prompts_of_1025_tokens({{0, 1}, {10, 4}, {20, 1}, {20, 1}});
  const ReplayResult r = replay_engine(trace, hand_worked_engine(8, 0.25));
  REQUIRE(r.ok());
  const double prefill = 1025.0 / 512;
  CHECK(r.host.host_hit_tokens == 1024);
  CHECK(r.host.device_hit_tokens == 1024);
  CHECK(r.engine.run.ttft_max_s == doctest::Approx(4 + 2.0 / 512));
  CHECK(r.engine.run.ttft_mean_s == doctest::Approx((2 * prefill + 2 * (4 + 2.0 / 512)) / 4));
}
