// The disk tier in the replay (issue 32): the flags and what they refuse, the report's disk keys
// (and none without a disk tier), a second run on the same --disk-path hitting from its first
// request, the done-when (a replay killed with SIGKILL and restarted on its path hits within one
// point of an uninterrupted run of the same requests), engine mode pricing the drive, and a disk
// tier above a remote tier (disk hits first, the remote's for the rest).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "disk/disk_tier.h"
#include "remote/remote_tier.h"
#include "tests/cli_runs.h"
#include "tests/disk_fixture.h"
#include "tests/memory_store.h"
#include "tests/small_traces.h"
#include "tools/replay/cache_replay.h"
#include "tools/replay/engine_replay.h"
#include "tools/trace/trace_reader.h"

namespace radixkv {
namespace {

// 64-token pages: a request (up to six 512-token blocks) takes 48 pages, and the device's 64
// hold one whole.
constexpr uint32_t P = 64;
const KvLayout kLayout = KvLayout::preset("llama-3-8b", P);

// Lines [first, last) of one random Mooncake-style trace (tests/small_traces.h): two slices are two
// halves of one trace.
std::string block_lines(uint64_t seed, int first, int last) {
  const std::string all = testing::random_block_text(seed, last, 8);
  std::size_t at = 0;
  for (int line = 0; line < first; ++line) at = all.find('\n', at) + 1;
  return all.substr(at);
}

tools::Trace block_trace(int first, int last) {
  return tools::parse_mooncake(block_lines(11, first, last), "blocks");
}

disk::DiskTierConfig disk_config(const std::string& dir, uint64_t pages,
                                 std::string write = "write_through") {
  // As the replay's --disk-path makes it: no KV stored, whole pages counted.
  disk::DiskTierConfig c{dir, kLayout, "llama-3-8b",
                         disk::SlotFile::kManifestBytes +
                             pages * disk::SlotGeometry{P, kLayout.bytes_per_page()}.slot_bytes()};
  c.payload_bytes = 0;
  c.charged_slot_bytes = disk::SlotGeometry{P, kLayout.bytes_per_page()}.slot_bytes();
  c.write_policy = std::move(write);
  return c;
}

tools::CacheReplayConfig cache_config(disk::DiskTier* tier, uint64_t capacity_pages = 64) {
  tools::CacheReplayConfig c;
  c.layout = kLayout;
  c.model = "llama-3-8b";
  c.capacity_pages = capacity_pages;
  c.disk = tier;
  return c;
}

nlohmann::json replay_json(std::vector<std::string> args) {
  args.insert(args.begin(), {"replay", "--json", "--no-progress"});
  const testing::CliRun run = testing::run_cli(args);
  REQUIRE_MESSAGE(run.status == 0, run.err);
  return nlohmann::json::parse(run.out);
}

TEST_CASE("disk replay: the flags, and what they refuse") {
  const std::string dir = testing::disk_dir("flags");
  const auto refused = [](std::vector<std::string> args, const std::string& why) {
    args.insert(args.begin(), "replay");
    const testing::CliRun run = testing::run_cli(args);
    CHECK(run.status == 2);
    CHECK_MESSAGE(run.err.find(why) != std::string::npos, run.err);
  };
  refused({"--disk-capacity-bytes", "1GiB"}, "--disk-capacity-bytes: needs --disk-path");
  refused({"--disk-write-policy", "write_through"}, "--disk-write-policy: needs --disk-path");
  refused({"--disk-path", dir}, "needs --disk-capacity-bytes");
  refused({"--disk-path", dir, "--disk-capacity-bytes", "1GiB", "--disk-read-gbps", "2"},
          "--disk-read-gbps: engine mode only");
  refused({"--disk-path", dir, "--disk-capacity-bytes", "1GiB", "--mode", "cluster"},
          "not in cluster mode");
  refused({"--disk-path", dir, "--disk-capacity-bytes", "1GiB", "--sweep", "1e3,1e4"},
          "not with --sweep");
  refused({"--disk-path", dir, "--disk-capacity-bytes", "1GiB", "--disk-policy", "nope"},
          "--disk-policy: ");
  refused({"--disk-path", dir, "--disk-capacity-bytes", "1GiB", "--disk-write-policy", "around"},
          "--disk-write-policy: ");
  refused({"--disk-path", dir, "--disk-capacity-bytes", "1MiB"},
          "--disk-capacity-bytes: disk tier: a capacity of 1048576 bytes holds no page");
  // A path holding another model's pages.
  const std::string trace = testing::scratch_path("flags.jsonl");
  std::ofstream(trace) << block_lines(11, 0, 20);
  replay_json({"--trace", trace, "--capacity-tokens", "4096", "--disk-path", dir,
               "--disk-capacity-bytes", "1GiB"});
  refused({"--disk-path", dir, "--disk-capacity-bytes", "1GiB", "--model", "qwen2.5-7b"},
          "pages of two layouts are never mixed");
}

TEST_CASE(
    "disk replay: the report's disk keys, none without the tier, and a second run on the "
    "path hitting at once") {
  const std::string dir = testing::disk_dir("report");
  const std::string trace = testing::scratch_path("blocks.jsonl");
  std::ofstream(trace) << block_lines(11, 0, 200);
  const std::vector<std::string> base = {"--trace",           trace, "--page-tokens", "64",
                                         "--capacity-tokens", "4096"};
  std::vector<std::string> with_disk = base;
  for (const char* a : {"--disk-path", dir.c_str(), "--disk-capacity-bytes", "8GiB"}) {
    with_disk.push_back(a);
  }
  const nlohmann::json plain = replay_json(base);
  CHECK_FALSE(plain.contains("disk_hit_tokens"));
  const nlohmann::json first = replay_json(with_disk);
  for (const char* key : {"disk_hit_tokens", "disk_loaded_pages", "disk_written_pages",
                          "disk_evictions", "disk_bad_pages", "disk_recovered_pages"}) {
    CHECK_MESSAGE(first.contains(key), key);
  }
  // Pages of 8 MiB (64 tokens of llama-3-8b) and a 4 KiB header block each, after the manifest.
  CHECK(first["disk_slots"] == ((8ull << 30) - 4096) / ((8ull << 20) + 4096));
  CHECK(first["disk_written_pages"].get<uint64_t>() > 0);
  CHECK(first["disk_hit_tokens"].get<uint64_t>() > 0);
  CHECK(first["disk_hit_tokens"] == first["disk_loaded_pages"].get<uint64_t>() * 64);
  CHECK(first["disk_recovered_pages"] == 0);
  CHECK(first["disk_bad_pages"] == 0);
  // The disk tier only adds hits: the device's are what they were.
  CHECK(first["hit_rate"].get<double>() > plain["hit_rate"].get<double>());
  CHECK(first["hit_tokens"].get<uint64_t>() - first["disk_hit_tokens"].get<uint64_t>() <=
        plain["hit_tokens"].get<uint64_t>());
  const nlohmann::json second = replay_json(with_disk);
  CHECK(second["disk_recovered_pages"].get<uint64_t>() > 0);
  CHECK(second["hit_rate"].get<double>() >= first["hit_rate"].get<double>());
  CHECK(testing::disk_bytes(dir) <= 8ull << 30);
}

// Cache mode over `trace` with a disk tier on `dir`; `after_first` (optional) is called once the
// first request has run, with the tier.
tools::ReplayResult replay_on(const tools::Trace& trace, const std::string& dir,
                              const std::function<void(const disk::DiskTier&)>& after_first = {}) {
  disk::DiskTier tier(disk_config(dir, 100000));
  tools::CacheReplayConfig config = cache_config(&tier);
  config.before_request = [&](std::size_t i) {
    if (i == 1 && after_first) after_first(tier);
  };
  return tools::replay_cache(trace, config);
}

TEST_CASE(
    "disk replay: killed with SIGKILL and restarted on its path, the rest of the trace hits "
    "from its first request and within one point of an uninterrupted run") {
  constexpr int kRequests = 600, kCut = 300;
  const tools::Trace whole = block_trace(0, kRequests);
  const tools::Trace before = block_trace(0, kCut);
  const tools::Trace after = block_trace(kCut, kRequests);
  REQUIRE(before.requests.size() + after.requests.size() == whole.requests.size());

  // Uninterrupted: the whole trace, and its first part alone (cache mode is deterministic, so the
  // rest's hits are the difference).
  const tools::ReplayResult all = replay_on(whole, testing::disk_dir("whole"));
  const tools::ReplayResult head = replay_on(before, testing::disk_dir("head"));
  const double uninterrupted =
      double(all.hit_tokens - head.hit_tokens) / double(all.input_tokens - head.input_tokens);

  // Interrupted: the first part in a child, killed with SIGKILL once its last request has run
  // (its writes still in flight, nothing drained, no destructor), then the rest on the same path.
  const std::string dir = testing::disk_dir("killed");
  testing::run_and_kill(
      [&](const auto& done) {
        disk::DiskTier tier(disk_config(dir, 100000));
        tools::CacheReplayConfig config = cache_config(&tier);
        config.at_end = [&](const RadixTree&) {
          done();
          ::pause();  // killed here
        };
        tools::replay_cache(before, config);
      },
      std::chrono::microseconds(0));

  uint64_t first_disk_pages = 0;
  const tools::ReplayResult rest = replay_on(after, dir, [&](const disk::DiskTier& tier) {
    first_disk_pages = tier.stats().loaded_pages;
  });
  CHECK(rest.disk.recovered_pages > 0);
  CHECK(rest.disk.bad_pages == 0);
  CHECK(first_disk_pages > 0);  // the restarted run's first request already hits the disk
  MESSAGE("uninterrupted " << 100 * uninterrupted << " %, restarted " << 100 * rest.hit_rate()
                           << " %, " << rest.disk.recovered_pages << " pages recovered in "
                           << rest.disk.recovery_seconds << " s");
  CHECK(std::abs(rest.hit_rate() - uninterrupted) <= 0.01);
  CHECK(rest.ok());
}

TEST_CASE("disk replay: engine mode prices the drive: a slower disk, a later first token") {
  const tools::Trace trace = block_trace(0, 200);
  const auto ttft = [&](double read_gbps) {
    disk::DiskTier tier(disk_config(testing::disk_dir("engine"), 100000, "write_back"));
    tools::EngineReplayConfig config;
    config.layout = kLayout;
    config.model = "llama-3-8b";
    config.pool_pages = 400;
    config.compare_no_cache = false;
    config.disk = &tier;
    config.disk_read_gbps = read_gbps;
    const tools::ReplayResult r = tools::replay_engine(trace, config);
    CHECK(r.ok());
    CHECK(r.disk.hit_tokens > 0);
    CHECK(r.disk.read_gbps == read_gbps);
    return r.engine.run.ttft_mean_s;
  };
  const double fast = ttft(1000.0), slow = ttft(0.05);
  CHECK(slow > fast);
}

TEST_CASE(
    "disk replay: a disk tier above a remote tier: the disk is asked first, the remote tier "
    "for the rest") {
  const tools::Trace trace = block_trace(0, 300);
  testing::MemoryStore::Shared shared;
  remote::RemoteTierConfig remote_config{"t", kLayout, "llama-3-8b", 0, 1u << 20, 64};
  remote::RemoteTier remote(std::make_unique<testing::MemoryStore>(shared),
                            std::make_unique<testing::MemoryStore>(shared), remote_config);
  disk::DiskTier tier(disk_config(testing::disk_dir("chain"), 200, "write_back"));
  tools::CacheReplayConfig config = cache_config(&tier);
  config.remote = &remote;
  const tools::ReplayResult r = tools::replay_cache(trace, config);
  CHECK(r.ok());
  // Both tiers hit; the split adds up to what the runtime counted below the local tiers.
  CHECK(r.disk.hit_tokens > 0);
  CHECK(r.remote.hit_tokens > 0);
  CHECK(r.disk.hit_tokens == r.disk.loaded_pages * P);
  CHECK(r.remote.hit_tokens == r.remote.loaded_pages * P);
  // The disk (200 pages) holds less than the remote store (no bound): it misses what it evicted,
  // which the remote tier serves.
  CHECK(r.disk.evictions > 0);
  CHECK(r.remote.stored_pages > r.disk.slots);
}

}  // namespace
}  // namespace radixkv
