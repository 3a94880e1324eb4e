// The remote tier against a real Redis (each case gets its own from scripts/with-redis.sh): two
// processes sharing pages, the faults the tier must survive (the server killed, restarted, slowed,
// full, a value corrupted), tenants and deployments kept apart, and credentials never printed.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "remote/page_value.h"
#include "remote/redis_store.h"
#include "remote/remote_tier.h"
#include "tests/child_process.h"
#include "tests/cli_runs.h"
#include "tests/redis_fixture.h"
#include "tests/remote_replays.h"
#include "tests/runtime_conversation.h"
#include "tests/small_traces.h"
#include "tools/replay/cache_replay.h"

namespace radixkv {
namespace {

using namespace std::chrono_literals;
using testing::redis_cli;

constexpr uint32_t P = 4;
const KvLayout kLayout{1, 1, 4, 2, P};

remote::RedisStoreOptions fast_options(std::chrono::milliseconds timeout = 200ms) {
  return {timeout, 5ms, 50ms};  // short backoff: a restarted server is used again at once
}

std::unique_ptr<remote::RemoteTier> make_tier(const std::string& url,
                                              const std::string& prefix = "test",
                                              remote::RedisStoreOptions options = fast_options(),
                                              std::size_t filler_bytes = 32) {
  const remote::RedisUrl parsed = remote::RedisUrl::parse(url);
  return std::make_unique<remote::RemoteTier>(
      remote::make_redis_store(parsed, options), remote::make_redis_store(parsed, options),
      remote::RemoteTierConfig{prefix, kLayout, "", filler_bytes, 1u << 16, 64});
}

tools::Trace small_trace(uint64_t seed = 5) {
  tools::GenConfig config = testing::small_gen_config(seed);
  config.conversations = 150;
  return testing::generated_trace(config);
}

// A trace of 20 generated conversations in a file, for command lines that need only a short run.
const std::string& tiny_trace_file() {
  static const std::string path = [] {
    const std::string file = testing::scratch_path("tiny.jsonl");
    REQUIRE(testing::run_cli({"gen", "--conversations", "20", "--out", file}).status == 0);
    return file;
  }();
  return path;
}

tools::ReplayResult replay(const tools::Trace& trace, remote::RemoteTier* tier,
                           uint64_t capacity_pages = 40,
                           std::function<void(std::size_t)> before = nullptr) {
  tools::CacheReplayConfig config;
  config.layout = kLayout;
  config.model = "test";
  config.capacity_pages = capacity_pages;
  config.remote = tier;
  config.before_request = std::move(before);
  return tools::replay_cache(trace, config);
}

TEST_CASE("redis store: put, get and exists in one pipeline each") {
  RADIXKV_NEED_REDIS();
  auto store =
      remote::make_redis_store(remote::RedisUrl::parse(testing::redis_url()), fast_options());
  const std::vector<std::pair<std::string, std::string>> items{
      {"k1", "v1"}, {"k2", std::string("bin\0ary", 7)}, {"k3", std::string(100000, 'x')}};
  const remote::PutResult put = store->put(items);
  CHECK(put.stored == 3);
  CHECK(put.refused == 0);
  const std::vector<std::string> keys{"k1", "missing", "k2", "k3"};
  const auto values = store->get(keys);
  REQUIRE(values.size() == 4);
  CHECK(values[0] == "v1");
  CHECK_FALSE(values[1].has_value());
  CHECK(values[2] == std::string("bin\0ary", 7));
  CHECK(values[3] == std::string(100000, 'x'));
  CHECK(store->exists(keys) == std::vector<bool>{true, false, true, true});
}

TEST_CASE(
    "two processes: B, with cold local tiers, gets remote hits from A, and B's hit rate >= A's") {
  RADIXKV_NEED_REDIS();
  REQUIRE(redis_cli(testing::redis_ports().at(0), "dbsize") == "0");
  std::vector<std::string> args{"replay", "--json", "--capacity-tokens", "4096"};
  const testing::CliRun local = testing::run_cli(args);  // the control: no remote tier
  REQUIRE(local.status == 0);
  const auto jl = nlohmann::json::parse(local.out);
  const auto [ja, jb] = testing::replay_twice(
      {"replay", "--capacity-tokens", "4096", "--remote", testing::redis_url()});
  CHECK(jl.count("remote_hit_tokens") == 0);
  // A's own evicted pages come back from Redis later in its run; B starts with all of them.
  CHECK(ja["remote_stored_pages"].get<uint64_t>() > 0);
  CHECK(ja["hit_rate"].get<double>() >= jl["hit_rate"].get<double>());
  CHECK(jb["remote_hit_tokens"].get<uint64_t>() > ja["remote_hit_tokens"].get<uint64_t>());
  CHECK(jb["hit_rate"].get<double>() >= ja["hit_rate"].get<double>());
  CHECK(jb["remote_loaded_pages"].get<uint64_t>() * 16 == jb["remote_hit_tokens"].get<uint64_t>());
  for (const auto* j : {&ja, &jb}) {
    CHECK((*j)["remote_errors"] == 0);
    CHECK((*j)["remote_bad_values"] == 0);
    CHECK((*j)["remote_dropped_writes"] == 0);
    CHECK((*j)["pages_leaked"] == 0);
  }
  MESSAGE("hit rate local-only " << jl["hit_rate"] << ", A " << ja["hit_rate"] << ", B "
                                 << jb["hit_rate"] << " (remote " << jb["remote_hit_tokens"]
                                 << " tokens)");
}

TEST_CASE("names: a server named by host name is looked up and used") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  auto tier = make_tier(fmt::format("redis://localhost:{}", port));
  const tools::ReplayResult r = replay(small_trace(), tier.get());
  tier->drain();
  CHECK(r.ok());
  CHECK(tier->stats().stored_pages > 0);
  CHECK(tier->stats().errors == 0);
  CHECK(redis_cli(port, "dbsize") == std::to_string(tier->stats().stored_pages));
}

TEST_CASE(
    "names: a host that never resolves costs counted errors, never a hang, and a run whose store "
    "never answered reports why and exits 1 (issue 28)") {
  // No server needed: RFC 6761 reserves .invalid for names that never resolve.
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string> args{"replay",
                                      "--capacity-tokens",
                                      "2048",
                                      "--remote",
                                      "redis://radixkv-test.invalid:6379",
                                      "--remote-timeout-ms",
                                      "200"};
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const testing::CliRun run = testing::run_cli(json_args);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(run.status == 1);
  const auto json = nlohmann::json::parse(run.out);  // the report is out all the same
  CHECK(json["remote_errors"].get<uint64_t>() > 0);
  CHECK(json["remote_stored_pages"] == 0);
  CHECK(json["remote_hit_tokens"] == 0);
  CHECK(json["remote_never_answered"] == true);
  CHECK(json["remote_unavailable"].get<uint64_t>() > 0);  // what waited out the backoff
  const std::string first = json["remote_first_error"].get<std::string>();
  CHECK_MESSAGE(first.find("radixkv-test.invalid") != std::string::npos, first);
  CHECK(run.err.find("radixkv replay: error: the remote tier redis://radixkv-test.invalid:6379 "
                     "never answered") != std::string::npos);
  CHECK(run.err.find("the first error: " + first) != std::string::npos);
  CHECK(seconds < 20.0);
  // The text report says it too (a shorter run).
  std::vector<std::string> text_args = args;
  text_args.insert(text_args.end(), {"--trace", tiny_trace_file()});
  const testing::CliRun text = testing::run_cli(text_args);
  CHECK(text.status == 1);
  CHECK(text.out.find("calls skipped in reconnect backoff") != std::string::npos);
  CHECK(text.out.find("remote error       " + first.substr(0, 20)) != std::string::npos);
  CHECK(text.out.find("no call succeeded") != std::string::npos);
}

TEST_CASE(
    "issue 28: the password from a file, or a warning for one in the URL, and bad files named") {
  // No server needed: nothing listens on port 1, so every run ends with exit status 1.
  const std::string secret = "s3cret-Pa55";
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{
        "replay", "--trace", tiny_trace_file(), "--capacity-tokens", "2048", "--remote-timeout-ms",
        "200"};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::CliRun r = testing::run_cli(args);
    CHECK(r.out.find(secret) == std::string::npos);
    CHECK(r.err.find(secret) == std::string::npos);
    return r;
  };
  const std::string warning = "radixkv replay: warning: --remote holds a password";
  testing::CliRun r = run({"--remote", fmt::format("redis://alice:{}@127.0.0.1:1", secret)});
  CHECK(r.status == 1);
  CHECK(r.err.find(warning) != std::string::npos);
  // From a --config file it is not on the command line: no warning.
  const std::string config = testing::scratch_path("with-password.toml");
  std::ofstream(config) << fmt::format("remote = \"redis://alice:{}@127.0.0.1:1\"\n", secret);
  r = run({"--config", config});
  CHECK(r.status == 1);
  CHECK(r.err.find(warning) == std::string::npos);

  const std::string file = testing::scratch_path("password");
  const auto write = [&](const std::string& text, ::mode_t mode) {
    std::ofstream(file, std::ios::trunc) << text;
    ::chmod(file.c_str(), mode);
  };
  write(secret + "\n", 0600);
  r = run({"--remote", "redis://alice:@127.0.0.1:1", "--remote-password-file", file});
  CHECK(r.status == 1);  // read and used (the server is not there), no warning
  CHECK(r.err.find("warning") == std::string::npos);
  write(secret + "\n", 0644);
  r = run({"--remote", "redis://alice:@127.0.0.1:1", "--remote-password-file", file});
  CHECK(r.err.find(fmt::format("warning: --remote-password-file '{}' may be read by other users "
                               "(mode 644); chmod 600 it",
                               file)) != std::string::npos);
  const std::pair<std::string, std::string> bad_files[] = {{"", "holds no password"},
                                                           {"\n", "holds no password"},
                                                           {"a\nb\n", "holds more than one line"}};
  for (const auto& [text, why] : bad_files) {
    write(text, 0600);
    r = run({"--remote", "redis://127.0.0.1:1", "--remote-password-file", file});
    CHECK(r.status == 2);
    CHECK(r.err.find(fmt::format("--remote-password-file: '{}' {}", file, why)) !=
          std::string::npos);
  }
  r = run({"--remote", "redis://127.0.0.1:1", "--remote-password-file", "/nonexistent-radixkv/p"});
  CHECK(r.status == 2);
  CHECK(r.err.find("'/nonexistent-radixkv/p' cannot be read: No such file or directory") !=
        std::string::npos);
  write(secret, 0600);
  r = run({"--remote", fmt::format("redis://alice:{}@127.0.0.1:1", secret),
           "--remote-password-file", file});
  CHECK(r.status == 2);
  CHECK(r.err.find("--remote-password-file: the URL holds a password too") != std::string::npos);
  r = testing::run_cli({"replay", "--remote-password-file", file});
  CHECK(r.status == 2);
  CHECK(r.err.find("--remote-password-file: needs --remote") != std::string::npos);
}

TEST_CASE(
    "two processes, engine mode: B, with cold local tiers, gets remote hits from A, and B's hit "
    "rate "
    ">= A's") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  REQUIRE(redis_cli(port, "dbsize") == "0");
  const std::vector<std::string> engine{"replay", "--mode", "engine", "--capacity-tokens", "65536"};
  std::vector<std::string> local_args = engine;
  local_args.push_back("--json");
  const testing::CliRun local = testing::run_cli(local_args);  // the control: no remote tier
  REQUIRE_MESSAGE(local.status == 0, local.err);
  const auto jl = nlohmann::json::parse(local.out);
  std::vector<std::string> remote_args = engine;
  remote_args.insert(remote_args.end(), {"--remote", testing::redis_url()});
  const auto [ja, jb] = testing::replay_twice(remote_args);
  CHECK(jl.count("remote_hit_tokens") == 0);
  CHECK(ja["mode"] == "engine");
  // Redis holds what A and B wrote (B rewrites pages it computed itself that A had written too:
  // answers, which no lookup asks for).
  const uint64_t keys = std::stoull(redis_cli(port, "dbsize"));
  CHECK(ja["remote_stored_pages"].get<uint64_t>() > 0);
  CHECK(keys >= ja["remote_stored_pages"].get<uint64_t>());
  CHECK(keys <=
        ja["remote_stored_pages"].get<uint64_t>() + jb["remote_stored_pages"].get<uint64_t>());
  CHECK(ja["hit_rate"].get<double>() >= jl["hit_rate"].get<double>());
  CHECK(jb["remote_hit_tokens"].get<uint64_t>() > ja["remote_hit_tokens"].get<uint64_t>());
  CHECK(jb["hit_rate"].get<double>() > ja["hit_rate"].get<double>());
  // Hits count at a request's first admission; a request readmitted after a preemption loads
  // its pages again.
  CHECK(jb["remote_loaded_pages"].get<uint64_t>() * 16 >= jb["remote_hit_tokens"].get<uint64_t>());
  // hit_rate counts every tier: the hit tokens include the remote ones.
  for (const auto* j : {&ja, &jb}) {
    CHECK((*j)["hit_tokens"].get<uint64_t>() >= (*j)["remote_hit_tokens"].get<uint64_t>());
    CHECK((*j)["hit_tokens"].get<double>() / (*j)["input_tokens"].get<double>() ==
          doctest::Approx((*j)["hit_rate"].get<double>()));
    CHECK((*j)["remote_errors"] == 0);
    CHECK((*j)["remote_bad_values"] == 0);
    CHECK((*j)["remote_dropped_writes"] == 0);
    CHECK((*j)["pages_leaked"] == 0);
    CHECK((*j)["accounting_ok"] == true);
  }
  MESSAGE("engine mode: hit rate local-only " << jl["hit_rate"] << ", A " << ja["hit_rate"]
                                              << ", B " << jb["hit_rate"] << " (remote "
                                              << jb["remote_hit_tokens"] << " tokens)");
}

TEST_CASE(
    "write-through: with nothing evicted, back writes nothing and through every cached page, "
    "which B then hits") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  // Room for every page of the built-in trace's prompts (and answers, in engine mode).
  for (const std::string mode : {"cache", "engine"}) {
    CAPTURE(mode);
    const auto run = [&](const std::string& write) {
      const testing::CliRun r =
          testing::run_cli({"replay", "--mode", mode, "--capacity-tokens", "2e7", "--json",
                            "--remote", testing::redis_url(), "--remote-write", write,
                            "--remote-queue-pages", "1e6", "--remote-timeout-ms", "2000"});
      REQUIRE_MESSAGE(r.status == 0, r.err);
      return nlohmann::json::parse(r.out);
    };
    REQUIRE(redis_cli(port, "flushall") == "OK");
    const auto back = run("back");
    REQUIRE(back["evictions"] == 0);
    CHECK(back["remote_write"] == "back");
    CHECK(back["remote_stored_pages"] == 0);
    CHECK(redis_cli(port, "dbsize") == "0");
    const auto after_back = run("back");
    CHECK(after_back["remote_hit_tokens"] == 0);
    // Engine mode's clock counts the lookups' wall time (engine_replay.h): only cache mode
    // repeats its schedule exactly.
    if (mode == "cache") CHECK(after_back["hit_rate"] == back["hit_rate"]);

    REQUIRE(redis_cli(port, "flushall") == "OK");
    const auto through = run("through");
    REQUIRE(through["evictions"] == 0);
    CHECK(through["remote_write"] == "through");
    // Exactly the distinct pages A cached, each once.
    const uint64_t cached = through["final_cached_pages"].get<uint64_t>();
    CHECK(through["inserted_pages"].get<uint64_t>() == cached);
    CHECK(through["remote_stored_pages"].get<uint64_t>() == cached);
    CHECK(redis_cli(port, "dbsize") == std::to_string(cached));
    CHECK(through["remote_dropped_writes"] == 0);
    if (mode == "cache") CHECK(through["hit_rate"] == back["hit_rate"]);  // nothing came back
    const auto after_through = run("back");
    CHECK(after_through["remote_hit_tokens"].get<uint64_t>() > 0);
    CHECK(after_through["hit_rate"].get<double>() > through["hit_rate"].get<double>());
    CHECK(after_through["remote_stored_pages"] == 0);
    for (const auto* j : {&back, &after_back, &through, &after_through}) {
      CHECK((*j)["remote_errors"] == 0);
      CHECK((*j)["pages_leaked"] == 0);
    }
  }
}

TEST_CASE("faults: Redis killed mid-replay: the replay finishes, errors counted, nothing leaked") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  const tools::Trace trace = small_trace();
  auto tier = make_tier(testing::redis_url());
  const std::size_t half = trace.requests.size() / 2;
  const auto t0 = std::chrono::steady_clock::now();
  const tools::ReplayResult r = replay(trace, tier.get(), 40, [&](std::size_t i) {
    if (i == half) testing::kill_redis(port);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.ok());
  CHECK(r.pages_leaked == 0);
  CHECK(r.remote.errors > 0);
  CHECK(r.remote.stored_pages > 0);  // before the kill
  CHECK(r.requests == trace.requests.size());
  // Down, each request costs a refused connection or nothing (backoff), never a timeout's wait.
  CHECK(seconds < 10.0);
}

TEST_CASE("faults: a server gone while a large put is being sent: an error, not SIGPIPE") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  auto store =
      remote::make_redis_store(remote::RedisUrl::parse(testing::redis_url()), fast_options(2s));
  const std::vector<std::pair<std::string, std::string>> small{{"warm", "up"}};
  REQUIRE(store->put(small).stored == 1);  // connected
  testing::kill_redis(port);
  // Far more than the socket buffers hold: the write goes on after the peer has reset the
  // connection, which raises SIGPIPE unless the store keeps it from the process.
  std::vector<std::pair<std::string, std::string>> large;
  for (int i = 0; i < 16; ++i)
    large.emplace_back(fmt::format("big:{}", i), std::string(1 << 20, 'x'));
  CHECK_THROWS_AS(store->put(large), remote::RemoteError);
}

TEST_CASE("faults: Redis restarted (empty): the same tier reconnects and hits resume") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  const tools::Trace trace = small_trace();
  auto tier = make_tier(testing::redis_url());
  const tools::ReplayResult filled = replay(trace, tier.get());
  REQUIRE(filled.remote.stored_pages > 0);
  CHECK(replay(trace, tier.get()).remote.hit_tokens > 0);  // a fresh local cache hits remotely

  testing::kill_redis(port);
  const tools::ReplayResult down = replay(trace, tier.get());
  CHECK(down.remote.hit_tokens == 0);
  CHECK(down.remote.errors > filled.remote.errors);
  CHECK(down.ok());

  REQUIRE(testing::restart_redis(port));
  std::this_thread::sleep_for(100ms);  // past the backoff
  const tools::ReplayResult refill = replay(trace, tier.get());
  CHECK(refill.remote.stored_pages > down.remote.stored_pages);
  const tools::ReplayResult again = replay(trace, tier.get());
  CHECK(again.remote.hit_tokens > 0);
  CHECK(again.remote.loaded_pages > refill.remote.loaded_pages);
}

TEST_CASE("faults: Redis slowed (DEBUG SLEEP): no load waits past the timeout") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  auto tier = make_tier(testing::redis_url(), "test", fast_options(100ms));
  PagePool pool(kLayout, 8, make_host_backend());
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(2, pages));
  const std::vector<TokenId> tokens{1, 2, 3, 4, 5, 6, 7, 8};
  const PageHash a = chain_page_hash(namespace_seed(0), std::span(tokens).first(4));
  const std::vector<PageHash> hashes{a, chain_page_hash(a, std::span(tokens).last(4))};
  CHECK(tier->load(namespace_seed(0), hashes, tokens, pool, pages) == 0);  // connects; empty
  const uint64_t errors = tier->stats().errors;

  std::thread sleeper([&] { redis_cli(port, "debug sleep 1.5"); });
  REQUIRE(testing::wait_until_asleep(port));  // the server is inside DEBUG SLEEP now
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(tier->load(namespace_seed(0), hashes, tokens, pool, pages) == 0);
  const auto waited = std::chrono::steady_clock::now() - t0;
  sleeper.join();
  CHECK(waited < 100ms + 150ms);  // the timeout and scheduling slack, far below the 1.5 s sleep
  CHECK(tier->stats().errors == errors + 1);
  // Awake again: after the backoff, loads work.
  std::this_thread::sleep_for(100ms);
  CHECK(tier->load(namespace_seed(0), hashes, tokens, pool, pages) == 0);
  CHECK(tier->stats().errors == errors + 1);
  CHECK(tier->stats().lookups >= 2);
  pool.release(pages);
}

TEST_CASE("faults: Redis full (tiny maxmemory, noeviction): writes refused and counted") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  REQUIRE(redis_cli(port, "config set maxmemory-policy noeviction") == "OK");
  // 1 MiB above what the empty server uses: the first 250 or so 4 KiB values fit, then no more.
  const std::string info = redis_cli(port, "info memory");
  const auto at = info.find("used_memory:");
  REQUIRE(at != std::string::npos);
  const long long base = std::stoll(info.substr(at + 12));
  REQUIRE(redis_cli(port, fmt::format("config set maxmemory {}", base + 1024 * 1024)) == "OK");
  const tools::Trace trace = small_trace();
  auto tier = make_tier(testing::redis_url(), "full", fast_options(), 4096);
  const tools::ReplayResult r = replay(trace, tier.get());
  CHECK(r.ok());
  CHECK(r.remote.dropped_writes > 0);
  CHECK(r.remote.errors > 0);
  CHECK(r.remote.bad_values == 0);
  // With an eviction policy the server makes room instead: every write lands.
  REQUIRE(redis_cli(port, "config set maxmemory-policy allkeys-lru") == "OK");
  auto tier2 = make_tier(testing::redis_url(), "lru", fast_options(), 4096);
  const tools::ReplayResult lru = replay(trace, tier2.get());
  CHECK(lru.remote.dropped_writes == 0);
  CHECK(lru.remote.stored_pages > 0);
}

TEST_CASE("faults: a corrupted value is a miss, counted, and the pages before it still load") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  auto tier = make_tier(testing::redis_url());
  PagePool pool(kLayout, 8, make_host_backend());
  tier->attach_pools(&pool, nullptr);
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(3, pages));
  const std::vector<TokenId> tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<PageHash> hashes;
  PageHash parent = namespace_seed(9);
  for (int i = 0; i < 3; ++i) {
    const std::span<const TokenId> page = std::span(tokens).subspan(i * P, P);
    hashes.push_back(chain_page_hash(parent, page));
    for (std::byte& b : pool.host_bytes(pages[i])) b = static_cast<std::byte>(0x30 + i);
    tier->dropping({Tier::kDevice, hashes.back(), parent, page, pages[i]});
    parent = hashes.back();
  }
  tier->drain();
  REQUIRE(tier->stats().stored_pages == 3);
  // Flip one payload byte of page 1 in the server (SETRANGE at the value's end).
  const std::string key = remote::page_key("test", remote::layout_id(kLayout, ""), hashes[1]);
  const std::string length = redis_cli(port, "strlen " + key);
  REQUIRE(redis_cli(port, fmt::format("setrange {} {} Z", key, std::stoll(length) - 1)) == length);
  for (PageId p : pages) {
    for (std::byte& b : pool.host_bytes(p)) b = std::byte{0};
  }
  CHECK(tier->load(namespace_seed(9), hashes, tokens, pool, pages) == 1);
  CHECK(tier->stats().bad_values == 1);
  CHECK(pool.host_bytes(pages[0])[0] == std::byte{0x30});
  CHECK(pool.host_bytes(pages[1])[0] == std::byte{0});  // never written with the bad payload
  pool.release(pages);
}

TEST_CASE("tenants and deployments: other namespaces and other prefixes never share pages") {
  RADIXKV_NEED_REDIS();
  tools::GenConfig config = testing::small_gen_config(8);
  config.conversations = 100;
  const tools::Trace trace = testing::generated_trace(config);
  tools::Trace other_tenant = trace;
  for (tools::TraceRequest& r : other_tenant.requests) r.ns += 1000;

  // Filled through a small cache (evictions write pages); read through one that never evicts, so
  // that every remote hit comes from what the filling run wrote.
  auto tier = make_tier(testing::redis_url(), "deployment-a");
  REQUIRE(replay(trace, tier.get()).remote.stored_pages > 0);
  const uint64_t big = 1u << 20;
  CHECK(replay(trace, tier.get(), big).remote.hit_tokens > 0);  // the control: the same tenant hits
  CHECK(replay(other_tenant, tier.get(), big).remote.hit_tokens == 0);
  auto other_deployment = make_tier(testing::redis_url(), "deployment-b");
  CHECK(replay(trace, other_deployment.get(), big).remote.hit_tokens == 0);
  CHECK(tier->stats().bad_values == 0);
}

TEST_CASE("credentials: from the URL or REDISCLI_AUTH, used, and never printed") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  const std::string secret = "s3cret-Pa55";
  REQUIRE(redis_cli(port, fmt::format("acl setuser alice on '>{}' '~*' '+@all'", secret)) == "OK");
  REQUIRE(redis_cli(port, fmt::format("config set requirepass {}", secret)) == "OK");
  const std::string host = fmt::format("127.0.0.1:{}", port);
  const auto run = [&](const std::string& url, std::vector<std::string> extra = {}) {
    // A generous timeout: sanitizer builds are slow.
    std::vector<std::string> args{
        "replay", "--remote", url, "--capacity-tokens", "2048", "--remote-timeout-ms", "2000"};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::CliRun r =
        testing::run_binary(args, {.out = testing::scratch_path("out.txt"), .err = ""});
    CHECK(r.out.find(secret) == std::string::npos);
    CHECK(r.err.find(secret) == std::string::npos);
    return r;
  };
  testing::CliRun r = run(fmt::format("redis://alice:{}@{}", secret, host), {"--json"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  auto json = nlohmann::json::parse(r.out);
  CHECK(json["remote"] == fmt::format("redis://alice:***@{}", host));
  CHECK(json["remote_stored_pages"].get<uint64_t>() > 0);
  CHECK(json["remote_errors"] == 0);

  r = run(fmt::format("redis://alice:{}@{}", secret, host));  // the text report
  CHECK(r.status == 0);
  CHECK(r.out.find("alice:***@") != std::string::npos);

  ::setenv("REDISCLI_AUTH", secret.c_str(), 1);  // the default user, password from the environment
  r = run("redis://" + host, {"--json"});
  ::unsetenv("REDISCLI_AUTH");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  json = nlohmann::json::parse(r.out);
  CHECK(json["remote_errors"] == 0);
  CHECK(json["remote_hit_tokens"].get<uint64_t>() > 0);  // the same keys as alice's run

  // From a file: the default user's password, the URL without one.
  const std::string file = testing::scratch_path("redis-password");
  std::ofstream(file) << secret << "\n";
  r = run("redis://" + host, {"--json", "--remote-password-file", file});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  json = nlohmann::json::parse(r.out);
  CHECK(json["remote_errors"] == 0);
  CHECK(json["remote_first_error"].is_null());
  CHECK(json["remote_never_answered"] == false);
  CHECK(json["remote_hit_tokens"].get<uint64_t>() > 0);

  // A wrong password: local-only caching, errors counted and the server's reason reported, exit
  // 1 (issue 28: it showed "2 errors" and exited 0), the password in no message.
  r = run(fmt::format("redis://alice:wrong-{}@{}", secret, host), {"--json"});
  CHECK(r.status == 1);
  json = nlohmann::json::parse(r.out);
  CHECK(json["remote_errors"].get<uint64_t>() > 0);
  CHECK(json["remote_hit_tokens"] == 0);
  CHECK(json["remote_never_answered"] == true);
  CHECK_MESSAGE(
      json["remote_first_error"].get<std::string>().find("WRONGPASS") != std::string::npos,
      json["remote_first_error"]);
  CHECK(r.err.find("never answered") != std::string::npos);
  CHECK(r.err.find("WRONGPASS") != std::string::npos);
  // A URL that does not parse: a usage error that masks the password.
  r = run(fmt::format("redis://alice:{}@{}/notadb", secret, host));
  CHECK(r.status == 2);
  CHECK(r.err.find("alice:***@") != std::string::npos);
  // Help shows the form, not a secret.
  const testing::CliRun help = testing::run_cli({"replay", "--help"});
  CHECK(help.out.find("redis://[user:@]HOST:PORT") != std::string::npos);
  CHECK(help.out.find("--remote-password-file FILE") != std::string::npos);
}

TEST_CASE("command line: the remote flags from a TOML config, and the combinations refused") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  const std::string config = testing::scratch_path("remote.toml");
  {
    std::ofstream file(config);
    file << fmt::format(
        "capacity-tokens = 2048\nremote = \"{}\"\nremote-prefix = \"from-config\"\n"
        "remote-timeout-ms = 1000\nremote-value-bytes = 100\n",
        testing::redis_url());
  }
  const testing::CliRun r = testing::run_cli({"replay", "--config", config, "--json"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto json = nlohmann::json::parse(r.out);
  CHECK(json["remote_stored_pages"].get<uint64_t>() > 0);
  // Every key carries the prefix; every value its 100 filler bytes after the header.
  const std::string keys = redis_cli(port, "--scan --pattern 'from-config:*'");
  const std::string key = keys.substr(0, keys.find('\n'));
  REQUIRE(key.rfind("from-config:", 0) == 0);
  CHECK(std::stoul(redis_cli(port, "strlen " + key)) == remote::kPageHeaderBytes + 16 * 4 + 100);
  CHECK(redis_cli(port, "dbsize") == std::to_string(json["remote_stored_pages"].get<uint64_t>()));

  const auto refused = [](std::vector<std::string> args, const std::string& why) {
    const testing::CliRun run = testing::run_cli(args);
    CHECK(run.status == 2);
    CHECK_MESSAGE(run.err.find(why) != std::string::npos, run.err);
  };
  refused({"replay", "--remote-prefix", "x"}, "--remote-prefix: needs --remote");
  refused({"replay", "--remote", testing::redis_url(), "--mode", "cluster"}, "not in cluster mode");
  refused({"replay", "--remote", testing::redis_url(), "--mode", "engine", "--no-cache"},
          "not with --no-cache");
  refused({"replay", "--remote", testing::redis_url(), "--sweep", "1e3,1e4"}, "not with --sweep");
  refused({"replay", "--remote", "redis://h:1", "--remote-prefix", ""}, "--remote-prefix");
  refused({"replay", "--remote", "redis://h:1", "--remote-write", "around"},
          "--remote-write: 'around' is not a write mode");
  refused({"replay", "--remote-write", "through"}, "--remote-write: needs --remote");
  refused({"replay", "--remote", "redis://h:1", "--remote-prefetch", "timeout"},
          "--remote-prefetch: engine mode only");
  refused({"replay", "--remote", "redis://h:1", "--mode", "engine", "--remote-prefetch", "eager"},
          "--remote-prefetch: 'eager' is not a prefetch policy");
  refused({"replay", "--remote", "redis://h:1", "--remote-value-bytes", "1TiB"},
          "--remote-value-bytes");
}

// Runs every prompt to the end through a runtime over a host-memory pool with `tier` under it, then
// evicts the whole cache (each page written to the tier); returns the turns' logs.
std::vector<testing::TurnLog> run_turns(const testing::TinyTransformer& model,
                                        remote::RemoteTier& tier,
                                        const std::vector<std::vector<TokenId>>& prompts) {
  PagePool pool(model.kv_layout(P), 256, make_host_backend());
  TierConfig tiers;
  tiers.remote = &tier;
  PrefixCacheRuntime runtime(pool, {}, tiers);
  std::vector<testing::TurnLog> logs;
  for (const std::vector<TokenId>& prompt : prompts) {
    testing::ActiveTurn turn(runtime, pool, model, 0, prompt, {});
    while (turn.step()) {
    }
    logs.push_back(turn.log());
  }
  runtime.check_accounting();
  runtime.evict(runtime.cached_pages());
  tier.drain();
  return logs;
}

std::vector<std::vector<TokenId>> conversation_prompts(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<TokenId> token(0, 255);
  std::vector<TokenId> system(13);
  for (TokenId& t : system) t = token(rng);
  std::vector<std::vector<TokenId>> prompts;
  for (int c = 0; c < 4; ++c) {
    std::vector<TokenId> prompt = system;
    for (int turn = 0; turn < 3; ++turn) {
      for (int i = 0; i < 7 + c + turn; ++i) prompt.push_back(token(rng));
      prompts.push_back(prompt);
    }
  }
  return prompts;
}

TEST_CASE("bytes: pages another runtime wrote to Redis give logits bitwise equal to from-scratch") {
  RADIXKV_NEED_REDIS();
  const testing::TinyTransformer model(testing::TinyConfig{}, 11);
  const auto prompts = conversation_prompts(4);
  const auto tier_for = [&](const std::string& prefix) {
    const remote::RedisUrl url = remote::RedisUrl::parse(testing::redis_url());
    return std::make_unique<remote::RemoteTier>(
        remote::make_redis_store(url, fast_options()),
        remote::make_redis_store(url, fast_options()),
        remote::RemoteTierConfig{prefix, model.kv_layout(P), "tiny", 0, 1u << 16, 64});
  };
  auto writer = tier_for("bytes");
  run_turns(model, *writer, prompts);
  REQUIRE(writer->stats().stored_pages > 0);

  auto reader = tier_for("bytes");
  const std::vector<testing::TurnLog> logs = run_turns(model, *reader, prompts);
  uint64_t remote_tokens = 0;
  for (const testing::TurnLog& log : logs) {
    remote_tokens += log.remote_hit_tokens;
    const testing::Comparison c = testing::compare_with_reference(model, log);
    CHECK(c.rows > 0);
    CHECK(c.bitwise_equal_rows == c.rows);
  }
  CHECK(remote_tokens > 0);
  CHECK(logs.front().remote_hit_tokens > 0);  // a fresh runtime's first turn already hits
  CHECK(reader->stats().bad_values == 0);

  // The control: KV of another model with the same name and shape (the one thing the format
  // cannot see) served as this one's makes the comparison fail, so it would catch wrong bytes.
  const testing::TinyTransformer other(testing::TinyConfig{}, 12);
  auto impostor = tier_for("impostor");
  run_turns(other, *impostor, prompts);
  auto fooled = tier_for("impostor");
  uint64_t unequal = 0;
  for (const testing::TurnLog& log : run_turns(model, *fooled, prompts)) {
    const testing::Comparison c = testing::compare_with_reference(model, log);
    unequal += c.rows - c.bitwise_equal_rows;
  }
  CHECK(fooled->stats().loaded_pages > 0);
  CHECK(unequal > 0);
}

}  // namespace
}  // namespace radixkv
