// The remote tier without a server: URLs and their masking, the key and value format, Redis
// Cluster's key slots, and the tier's load/write rules over an in-memory store
// (tests/memory_store.h). The same rules against a real Redis: tests/test_remote_redis.cpp.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "kv_store/page_backend.h"
#include "kv_store/page_pool.h"
#include "radix/page_hash.h"
#include "remote/page_value.h"
#include "remote/redis_cluster_store.h"
#include "remote/redis_store.h"
#include "remote/redis_url.h"
#include "remote/remote_tier.h"
#include "remote/resolved_host.h"
#include "runtime/prefix_cache_runtime.h"
#include "tests/memory_store.h"
#include "tests/small_traces.h"
#include "tools/replay/engine_replay.h"
#include "tools/replay/replay_result.h"

namespace radixkv {
namespace {

using remote::RedisUrl;
using remote::ValueCheck;

TEST_CASE("remote URL: hosts, ports, databases, credentials and the cluster form") {
  const RedisUrl plain = RedisUrl::parse("redis://cache.internal:6380/2", std::nullopt);
  CHECK_FALSE(plain.cluster);
  REQUIRE(plain.endpoints.size() == 1);
  CHECK(plain.endpoints[0].host == "cache.internal");
  CHECK(plain.endpoints[0].port == 6380);
  CHECK(plain.db == 2);
  CHECK_FALSE(plain.password.has_value());
  CHECK(RedisUrl::parse("redis://h", std::nullopt).endpoints[0].port == 6379);
  CHECK(RedisUrl::parse("redis://[::1]:7000", std::nullopt).endpoints[0].host == "::1");

  const RedisUrl auth = RedisUrl::parse("redis://alice:p%40ss:w@h:1", std::nullopt);
  CHECK(auth.user == "alice");
  CHECK(auth.password == "p@ss:w");
  const RedisUrl only_password = RedisUrl::parse("redis://s3cret@h:1", std::nullopt);
  CHECK(only_password.user.empty());
  CHECK(only_password.password == "s3cret");
  // REDISCLI_AUTH when the URL has none; the URL's wins otherwise.
  CHECK(RedisUrl::parse("redis://h:1", "from-env").password == "from-env");
  CHECK(RedisUrl::parse("redis://bob:mine@h:1", "from-env").password == "mine");

  const RedisUrl cluster = RedisUrl::parse("redis+cluster://a:1,b:2,[::1]:3", std::nullopt);
  CHECK(cluster.cluster);
  REQUIRE(cluster.endpoints.size() == 3);
  CHECK(cluster.endpoints[1] == remote::RedisEndpoint{"b", 2});
  CHECK(cluster.describe() == "redis+cluster://a:1,b:2,[::1]:3");
}

TEST_CASE("remote URL: bad ones are refused, saying why, and no message shows a password") {
  const auto refused = [](const std::string& url, const std::string& why) {
    CAPTURE(url);
    try {
      RedisUrl::parse(url, std::nullopt);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      CHECK(message.find(why) != std::string::npos);
      CHECK(message.find("hunter2") == std::string::npos);
    }
  };
  refused("http://h:1", "unknown scheme");
  refused("rediss://u:hunter2@h:1", "TLS");
  refused("redis://u:hunter2@h:0", "port '0'");
  refused("redis://u:hunter2@h:99999", "port '99999'");
  refused("redis://u:hunter2@h:1/x", "database 'x'");
  refused("redis://u:hunter2@:1", "no host");
  refused("redis://u:hunter2@a:1,b:2", "redis+cluster://");
  refused("redis+cluster://u:hunter2@a:1/3", "only database 0");
  refused("redis://u:hunter2%4@h:1", "escape");

  CHECK(remote::mask_url("redis://alice:hunter2@h:1/2") == "redis://alice:***@h:1/2");
  CHECK(remote::mask_url("redis://hunter2@h:1") == "redis://***@h:1");
  CHECK(remote::mask_url("redis://h:1") == "redis://h:1");
  CHECK(RedisUrl::parse("redis://alice:hunter2@h:1/2", std::nullopt).describe() ==
        "redis://alice:***@h:1/2");
  CHECK(RedisUrl::parse("redis://h:1", "hunter2").describe() == "redis://***@h:1");
}

TEST_CASE("remote host lookup: numeric hosts as they are, localhost found, .invalid refused") {
  using remote::ResolvedHost;
  using Clock = std::chrono::steady_clock;
  const auto soon = [] { return Clock::now() + std::chrono::seconds(5); };
  ResolvedHost v4("127.0.0.1", [](const std::string&) -> remote::HostLookup {
    FAIL("a numeric host is not looked up");
    return {};
  });
  CHECK(v4.address(soon()) == "127.0.0.1");
  ResolvedHost v6("::1", [](const std::string&) -> remote::HostLookup { return {}; });
  CHECK(v6.address(soon()) == "::1");
  // /etc/hosts: no network involved. IPv4 first, as hiredis prefers it.
  ResolvedHost localhost("localhost");
  const std::string address = localhost.address(soon());
  CHECK((address == "127.0.0.1" || address == "::1"));
  // RFC 6761: names under .invalid never resolve. Whether the resolver says so at once or has no
  // network to ask, the answer is an error naming the host by the deadline, not a hang.
  ResolvedHost invalid("radixkv-test.invalid");
  const auto start = Clock::now();
  CHECK_THROWS_WITH_AS(invalid.address(Clock::now() + std::chrono::milliseconds(500)),
                       doctest::Contains("cannot resolve radixkv-test.invalid: "),
                       remote::RemoteError);
  CHECK(Clock::now() - start < std::chrono::milliseconds(1500));
}

TEST_CASE("remote host lookup: a lookup that hangs costs the deadline, and only one is in flight") {
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
  std::atomic<int> calls{0};
  remote::ResolvedHost host("cache.example", [&](const std::string& name) {
    ++calls;
    std::unique_lock lock(mutex);
    released_cv.wait(lock, [&] { return released; });
    return remote::HostLookup{name == "cache.example" ? "10.1.2.3" : "", "wrong name"};
  });
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto start = Clock::now();
    CHECK_THROWS_WITH_AS(host.address(start + std::chrono::milliseconds(100)),
                         doctest::Contains("cannot resolve cache.example: no answer within"),
                         remote::RemoteError);
    const auto took = Clock::now() - start;
    CHECK(took >= std::chrono::milliseconds(95));
    CHECK(took < std::chrono::milliseconds(1000));
  }
  CHECK(calls == 1);  // the second call waited on the first lookup
  {
    const std::lock_guard lock(mutex);
    released = true;
  }
  released_cv.notify_all();
  CHECK(host.address(Clock::now() + std::chrono::seconds(5)) == "10.1.2.3");
  CHECK(host.address(Clock::now()) == "10.1.2.3");  // kept: no lookup, no wait
  CHECK(calls == 1);
  host.forget();
  CHECK(host.address(Clock::now() + std::chrono::seconds(5)) == "10.1.2.3");
  CHECK(calls == 2);  // looked up again after forget()
}

TEST_CASE("remote host lookup: a store whose host does not resolve fails in time, then backs off") {
  using Clock = std::chrono::steady_clock;
  auto store = remote::make_redis_store(
      RedisUrl::parse("redis://radixkv-test.invalid:6379", std::nullopt),
      {std::chrono::milliseconds(300), std::chrono::seconds(10), std::chrono::seconds(10)});
  const std::vector<std::string> keys{"a", "b"};
  const auto start = Clock::now();
  CHECK_THROWS_WITH_AS(store->get(keys), doctest::Contains("cannot resolve radixkv-test.invalid"),
                       remote::RemoteError);
  CHECK(Clock::now() - start < std::chrono::milliseconds(1300));
  CHECK_THROWS_AS(store->get(keys), remote::RemoteUnavailable);  // backing off: no lookup
}

TEST_CASE("remote host lookup: a store whose name lookup hangs fails by its timeout") {
  using Clock = std::chrono::steady_clock;
  // Shared with the lookup threads, which outlive their callers until released.
  struct Gate {
    std::mutex mutex;
    std::condition_variable opened_cv;
    bool opened = false;
  };
  const auto gate = std::make_shared<Gate>();
  remote::RedisStoreOptions options{std::chrono::milliseconds(200), std::chrono::seconds(10),
                                    std::chrono::seconds(10)};
  options.look_up = [gate](const std::string&) {
    std::unique_lock lock(gate->mutex);
    gate->opened_cv.wait(lock, [&] { return gate->opened; });
    return remote::HostLookup{"", "gave up"};
  };
  const std::vector<std::string> keys{"a"};
  for (const char* url : {"redis://cache.example:6379", "redis+cluster://cache.example:6379"}) {
    CAPTURE(url);
    auto store = remote::make_redis_store(RedisUrl::parse(url, std::nullopt), options);
    const auto start = Clock::now();
    CHECK_THROWS_WITH_AS(store->get(keys),
                         doctest::Contains("cannot resolve cache.example: no answer within"),
                         remote::RemoteError);
    const auto took = Clock::now() - start;
    CHECK(took >= std::chrono::milliseconds(190));
    CHECK(took < std::chrono::milliseconds(1000));
  }
  {
    const std::lock_guard lock(gate->mutex);
    gate->opened = true;
  }
  gate->opened_cv.notify_all();
}

TEST_CASE("remote keys: prefix, layout id and the 128-bit page hash, and models differ") {
  const PageHash hash{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  CHECK(remote::page_key("prod", 0x42, hash) ==
        "prod:0000000000000042:fedcba98765432100123456789abcdef");
  KvLayout a = KvLayout::preset("llama-3-8b", 16);
  KvLayout b = a;
  b.page_tokens = 32;
  const auto id = [](const KvLayout& layout, std::string_view model = "m") {
    return remote::layout_id(layout, model);
  };
  CHECK(id(a) == id(KvLayout::preset("llama-3-8b", 16)));
  CHECK(id(a) != id(b));
  b = a;
  b.kv_heads += 1;
  CHECK(id(a) != id(b));
  CHECK(id(a, "llama-3-8b") != id(a, "llama-3-8b-finetune"));  // one shape, two models
}

TEST_CASE("remote values: what was written checks out, and every altered field is a miss") {
  const std::vector<TokenId> tokens{5, 6, 7, 8};
  const PageHash parent = namespace_seed(3);
  std::vector<std::byte> bytes(64);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7);
  const std::string value = remote::encode_page_value(99, parent, tokens, bytes);
  CHECK(value.size() == remote::kPageHeaderBytes + 16 + 64);
  const remote::ExpectedPage expected{99, parent, tokens, 64};
  std::span<const std::byte> payload;
  REQUIRE(remote::check_page_value(value, expected, &payload) == ValueCheck::kOk);
  CHECK(std::equal(payload.begin(), payload.end(), bytes.begin(), bytes.end()));

  const auto altered = [&](std::size_t at) {
    std::string v = value;
    v[at] = static_cast<char>(v[at] ^ 1);
    return remote::check_page_value(v, expected);
  };
  CHECK(altered(0) == ValueCheck::kMagic);
  CHECK(altered(4) == ValueCheck::kVersion);
  CHECK(altered(8) == ValueCheck::kLayout);
  CHECK(altered(16) == ValueCheck::kTokens);  // the page count
  CHECK(altered(20) == ValueCheck::kChecksum);
  CHECK(altered(28) == ValueCheck::kParent);
  CHECK(altered(44) == ValueCheck::kTruncated);  // the payload size no longer adds up
  CHECK(altered(remote::kPageHeaderBytes + 4) == ValueCheck::kTokens);
  CHECK(altered(value.size() - 1) == ValueCheck::kChecksum);
  CHECK(remote::check_page_value(value.substr(0, value.size() - 1), expected) ==
        ValueCheck::kTruncated);
  CHECK(remote::check_page_value(value.substr(0, 10), expected) == ValueCheck::kTruncated);

  remote::ExpectedPage other = expected;
  other.payload_bytes = 128;
  CHECK(remote::check_page_value(value, other) == ValueCheck::kSize);
  other = expected;
  other.parent = namespace_seed(4);
  CHECK(remote::check_page_value(value, other) == ValueCheck::kParent);
  other.payload_bytes = SIZE_MAX;  // a pool without bytes takes any size
  other.parent = parent;
  CHECK(remote::check_page_value(remote::encode_page_value(99, parent, tokens, 1000), other) ==
        ValueCheck::kOk);
}

TEST_CASE("cluster key slots: CRC16-XMODEM mod 16384, hash tags as the specification says") {
  // The specification's check value: CRC16 of "123456789" is 0x31C3.
  CHECK(remote::cluster_slot("123456789") == 0x31C3);
  // Values Redis' CLUSTER KEYSLOT gives (also checked against a live cluster in
  // tests/test_remote_cluster.cpp).
  CHECK(remote::cluster_slot("foo") == 12182);
  CHECK(remote::cluster_slot("bar") == 5061);
  CHECK(remote::cluster_slot("{user1000}.following") == remote::cluster_slot("user1000"));
  CHECK(remote::cluster_slot("foo{}{bar}") == remote::cluster_slot("foo{}{bar}"));
  CHECK(remote::cluster_slot("foo{}{bar}") != remote::cluster_slot("bar"));  // empty tag: whole key
  CHECK(remote::cluster_slot("foo{{bar}}zap") == remote::cluster_slot("{bar"));
}

// A tier over a MemoryStore, with a host-memory pool of 4-token pages.
struct TierFixture {
  static constexpr uint32_t P = 4;
  testing::MemoryStore::Shared shared;
  KvLayout layout{1, 1, 4, 2, P};  // 64 bytes per page
  PagePool pool{layout, 16, make_host_backend()};
  remote::RemoteTier tier;

  explicit TierFixture(std::size_t queue_pages = 64,
                       remote::PrefetchPolicy prefetch = remote::PrefetchPolicy::kOff)
      : tier(std::make_unique<testing::MemoryStore>(shared),
             std::make_unique<testing::MemoryStore>(shared), config(queue_pages, prefetch),
             std::make_unique<testing::MemoryStore>(shared)) {
    tier.attach_pools(&pool, nullptr);
  }

  remote::RemoteTierConfig config(std::size_t queue_pages, remote::PrefetchPolicy prefetch) const {
    remote::RemoteTierConfig c{"t", layout, "", 0, queue_pages, 8};
    c.prefetch = prefetch;
    c.prefetch_wait = std::chrono::milliseconds(100);
    return c;
  }

  // The hashes of the pages of `tokens` after `matched` pages; `parent` gets the one before.
  static std::vector<PageHash> hashes_after(Namespace ns, const std::vector<TokenId>& tokens,
                                            uint32_t matched, PageHash* parent = nullptr) {
    std::vector<PageHash> hashes;
    const PageHash before = chain_page_hashes(
        ns, tokens, P, matched, static_cast<uint32_t>(tokens.size() / P) - matched, hashes);
    if (parent != nullptr) *parent = before;
    return hashes;
  }

  // Writes the first `pages` pages of `tokens` (namespace ns) as if each left the device with the
  // byte pattern `fill + i`, and waits for the writer.
  void write(Namespace ns, const std::vector<TokenId>& tokens, uint32_t pages, uint8_t fill) {
    std::vector<PageId> ids;
    REQUIRE(pool.allocate(pages, ids));
    PageHash parent = namespace_seed(ns);
    for (uint32_t i = 0; i < pages; ++i) {
      const std::span<const TokenId> page(tokens.data() + i * P, P);
      const PageHash hash = chain_page_hash(parent, page);
      for (std::byte& b : pool.host_bytes(ids[i])) b = static_cast<std::byte>(fill + i);
      tier.dropping({Tier::kDevice, hash, parent, page, ids[i]});
      parent = hash;
    }
    pool.release(ids);
    tier.drain();
  }

  // Loads what follows `matched` pages of `tokens`; returns the count and checks the bytes.
  uint32_t load(Namespace ns, const std::vector<TokenId>& tokens, uint32_t matched,
                uint8_t fill = 0) {
    PageHash parent;
    const std::vector<PageHash> hashes = hashes_after(ns, tokens, matched, &parent);
    std::vector<PageId> ids;
    REQUIRE(pool.allocate(static_cast<uint32_t>(hashes.size()), ids));
    const uint32_t loaded =
        tier.load(parent, hashes, std::span(tokens).subspan(matched * P), pool, ids);
    for (uint32_t i = 0; i < loaded; ++i) {
      for (std::byte b : pool.host_bytes(ids[i])) {
        REQUIRE(b == static_cast<std::byte>(fill + matched + i));
      }
    }
    pool.release(ids);
    return loaded;
  }
};

std::vector<TokenId> iota_tokens(std::size_t n, TokenId first) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST_CASE("remote tier: the leading run that checks out is loaded, bytes and all") {
  TierFixture f;
  const std::vector<TokenId> tokens = iota_tokens(6 * TierFixture::P, 100);
  f.write(1, tokens, 4, 10);  // pages 0..3 in the store
  CHECK(f.tier.stats().stored_pages == 4);
  CHECK(f.load(1, tokens, 0, 10) == 4);  // a run of 4, then page 4 is missing
  CHECK(f.load(1, tokens, 2, 10) == 2);  // after a local match of 2
  CHECK(f.load(1, tokens, 4, 10) == 0);
  // Another namespace (tenant) with the same tokens never sees them.
  CHECK(f.load(2, tokens, 0) == 0);
  // A prompt that differs in page 1 takes page 0 only.
  std::vector<TokenId> other = tokens;
  other[TierFixture::P + 1] = -5;
  CHECK(f.load(1, other, 0, 10) == 1);
  CHECK(f.tier.stats().bad_values == 0);
  CHECK(f.tier.stats().loaded_pages == 4 + 2 + 1);
}

TEST_CASE("remote tier: a page the store holds is not written again, until a failure forgets") {
  TierFixture f;
  const std::vector<TokenId> tokens = iota_tokens(3 * TierFixture::P, 40);
  f.write(0, tokens, 3, 0);
  CHECK(f.tier.stats().stored_pages == 3);
  const uint64_t puts = f.shared.puts;  // one per batch the writer sent: 1 to 3
  f.write(0, tokens, 3, 0);             // dropped again: known, not sent
  CHECK(f.tier.stats().stored_pages == 3);
  CHECK(f.tier.stats().known_skipped == 3);
  CHECK(f.shared.puts == puts);
  // Loaded pages are known too: a fresh tier that loads them does not write them back.
  TierFixture g;
  g.shared.values = f.shared.values;
  CHECK(g.load(0, tokens, 0) == 3);
  g.write(0, tokens, 3, 0);
  CHECK(g.tier.stats().stored_pages == 0);
  // A failed lookup (the server may have restarted empty) forgets: the next drop writes.
  g.shared.failing = true;
  CHECK(g.load(0, tokens, 0) == 0);
  g.shared.failing = false;
  g.write(0, tokens, 3, 0);
  CHECK(g.tier.stats().stored_pages == 3);
}

TEST_CASE("remote tier: a corrupted value ends the run as a miss, counted, never served") {
  TierFixture f;
  const std::vector<TokenId> tokens = iota_tokens(4 * TierFixture::P, 7);
  f.write(3, tokens, 4, 1);
  {
    std::lock_guard lock(f.shared.mutex);
    REQUIRE(f.shared.values.size() == 4);
    // Flip the last payload byte of page 2's value.
    PageHash h = namespace_seed(3);
    for (uint32_t i = 0; i < 3; ++i) h = chain_page_hash(h, {tokens.data() + i * 4, 4});
    std::string& v = f.shared.values.at(remote::page_key("t", remote::layout_id(f.layout, ""), h));
    v.back() = static_cast<char>(v.back() ^ 0x40);
  }
  CHECK(f.load(3, tokens, 0, 1) == 2);
  CHECK(f.tier.stats().bad_values == 1);
}

TEST_CASE("remote tier: a failing store is a miss and an error, and writes are dropped, counted") {
  TierFixture f;
  const std::vector<TokenId> tokens = iota_tokens(3 * TierFixture::P, 1);
  f.write(0, tokens, 3, 0);
  f.shared.failing = true;
  CHECK(f.load(0, tokens, 0) == 0);
  CHECK(f.tier.stats().errors == 1);
  f.write(0, iota_tokens(2 * TierFixture::P, 50), 2, 0);
  CHECK(f.tier.stats().dropped_writes == 2);
  CHECK(f.tier.stats().errors >= 2);  // the writer may have sent the two pages in one batch or two
  f.shared.failing = false;
  CHECK(f.load(0, tokens, 0) == 3);  // and back again
}

TEST_CASE(
    "issue 28: the tier keeps its first error's message, counts calls skipped in backoff, and "
    "tells a tier that never answered from one that rode out an outage") {
  TierFixture f;
  const std::vector<TokenId> tokens = iota_tokens(3 * TierFixture::P, 1);
  f.shared.failing = true;  // from the start: a wrong password, a server not there
  CHECK(f.load(0, tokens, 0) == 0);
  CHECK(f.tier.stats().errors == 1);
  CHECK(f.tier.stats().first_error == "memory store: told to fail");
  CHECK(f.tier.stats().never_answered());
  f.shared.failing = false;
  f.shared.backing_off = true;  // the store waits out its backoff: calls skipped, not errors
  CHECK(f.load(0, tokens, 0) == 0);
  f.write(0, iota_tokens(2 * TierFixture::P, 50), 2, 0);
  const remote::RemoteTierStats waiting = f.tier.stats();
  CHECK(waiting.errors == 1);
  CHECK(waiting.unavailable >= 2);  // the load, and the writer's batch or batches
  CHECK(waiting.answered == 0);
  CHECK(waiting.never_answered());
  const tools::RemoteReplayResult report = tools::remote_replay_result(f.tier, 0);
  CHECK(report.unavailable == waiting.unavailable);
  CHECK(report.first_error == "memory store: told to fail");
  CHECK(report.never_answered);
  // Back: one answer is enough, and the first error stays the first, whatever fails later.
  f.shared.backing_off = false;
  f.write(0, tokens, 3, 0);
  CHECK(f.load(0, tokens, 0) == 3);
  {
    std::lock_guard lock(f.shared.mutex);
    f.shared.failing_keys.insert(remote::page_key("t", remote::layout_id(f.layout, ""),
                                                  TierFixture::hashes_after(0, tokens, 0)[1]));
  }
  CHECK(f.load(0, tokens, 0) == 1);
  const remote::RemoteTierStats back = f.tier.stats();
  CHECK(back.errors == 2);
  CHECK(back.answered >= 3);  // a write batch and two loads
  CHECK_FALSE(back.never_answered());
  CHECK(back.first_error == "memory store: told to fail");
  CHECK_FALSE(tools::remote_replay_result(f.tier, 0).never_answered);
}

TEST_CASE("issue 28: a prefetch's failure is the tier's first error when its own calls had none") {
  TierFixture f(64, remote::PrefetchPolicy::kTimeout);
  const std::vector<TokenId> tokens = iota_tokens(2 * TierFixture::P, 300);
  f.shared.failing = true;
  f.tier.prefetch(TierFixture::hashes_after(0, tokens, 0));
  f.tier.drain();
  const remote::RemoteTierStats s = f.tier.stats();
  CHECK(s.prefetch.errors == 1);
  CHECK(s.prefetch.answered == 0);
  CHECK(s.errors == 0);
  CHECK(s.first_error == "memory store: told to fail");
  CHECK(s.never_answered());
  f.shared.failing = false;
  f.tier.prefetch(TierFixture::hashes_after(0, iota_tokens(2 * TierFixture::P, 400), 0));
  f.tier.drain();
  CHECK(f.tier.stats().prefetch.answered == 1);
  CHECK_FALSE(f.tier.stats().never_answered());
}

TEST_CASE("remote tier: a master failing fails only its keys, and the run before them is loaded") {
  TierFixture f;
  const std::vector<TokenId> tokens = iota_tokens(5 * TierFixture::P, 900);
  f.write(0, tokens, 5, 30);
  const std::vector<PageHash> hashes = TierFixture::hashes_after(0, tokens, 0);
  const std::string key3 = remote::page_key("t", remote::layout_id(f.layout, ""), hashes[3]);
  {
    std::lock_guard lock(f.shared.mutex);
    f.shared.failing_keys.insert(key3);  // page 3's master is down
  }
  CHECK(f.load(0, tokens, 0, 30) == 3);  // pages 0..2 from the healthy masters, bytes checked
  CHECK(f.tier.stats().errors == 1);
  CHECK(f.tier.stats().lookups == 1);
  CHECK(f.tier.stats().bad_values == 0);
  {
    std::lock_guard lock(f.shared.mutex);
    f.shared.failing_keys.clear();
  }
  CHECK(f.load(0, tokens, 0, 30) == 5);
}

TEST_CASE(
    "remote prefetch: a partly failed prefetch keeps the values it got, and the rest is asked "
    "again") {
  TierFixture f(64, remote::PrefetchPolicy::kTimeout);
  const std::vector<TokenId> tokens = iota_tokens(5 * TierFixture::P, 700);
  f.write(0, tokens, 5, 50);
  const std::vector<PageHash> hashes = TierFixture::hashes_after(0, tokens, 0);
  const std::string key3 = remote::page_key("t", remote::layout_id(f.layout, ""), hashes[3]);
  {
    std::lock_guard lock(f.shared.mutex);
    f.shared.failing_keys.insert(key3);
  }
  f.tier.prefetch(hashes);
  f.tier.drain();
  CHECK(f.tier.stats().prefetch.errors == 1);
  {
    std::lock_guard lock(f.shared.mutex);
    f.shared.failing_keys.clear();  // back before the load
  }
  const uint64_t gets = f.shared.gets;
  // Pages 0..2 come from the prefetch; page 3 failed there, so it is not a miss: the load asks
  // the store for pages 3 and 4 and gets them.
  CHECK(f.load(0, tokens, 0, 50) == 5);
  CHECK(f.tier.stats().prefetch.taken_pages == 3);
  CHECK(f.shared.gets == gets + 1);
  // The report counts the prefetch's failure among the remote errors.
  const tools::RemoteReplayResult report = tools::remote_replay_result(f.tier, 0);
  CHECK(f.tier.stats().errors == 0);
  CHECK(report.errors == 1);
}

TEST_CASE("remote tier: a full write queue drops pages and counts them, never blocks") {
  TierFixture f(/*queue_pages=*/2);
  std::unique_lock hold(f.shared.mutex);  // the writer blocks on its first put
  std::vector<PageId> ids;
  REQUIRE(f.pool.allocate(1, ids));
  const std::vector<TokenId> page{1, 2, 3, 4};
  PageHash parent = namespace_seed(0);
  for (int i = 0; i < 20; ++i) {
    f.tier.dropping({Tier::kDevice, chain_page_hash(parent, page), parent, page, ids[0]});
    parent = chain_page_hash(parent, page);
  }
  const remote::RemoteTierStats s = f.tier.stats();
  // At most one batch in the writer's hands and two waiting; the rest dropped.
  CHECK(s.dropped_writes >= 20 - 2 - 8);
  CHECK(s.queued_pages + s.dropped_writes == 20);
  hold.unlock();
  f.tier.drain();
  CHECK(f.tier.stats().stored_pages == s.queued_pages);
  f.pool.release(ids);
}

TEST_CASE("remote prefetch: a load after a finished prefetch asks the store nothing, same pages") {
  for (const auto policy :
       {remote::PrefetchPolicy::kBestEffort, remote::PrefetchPolicy::kTimeout}) {
    CAPTURE(to_string(policy));
    TierFixture sync;
    TierFixture f(64, policy);
    const std::vector<TokenId> tokens = iota_tokens(6 * TierFixture::P, 300);
    for (TierFixture* x : {&sync, &f}) x->write(4, tokens, 4, 20);  // pages 0..3 of 6
    f.tier.prefetch(TierFixture::hashes_after(4, tokens, 1));
    f.tier.drain();
    const uint64_t gets = f.shared.gets;
    // The same run as a synchronous load, bytes checked by load(): pages 1..3, page 4 missing.
    CHECK(sync.load(4, tokens, 1, 20) == 3);
    CHECK(f.load(4, tokens, 1, 20) == 3);
    CHECK(f.shared.gets == gets);  // the prefetch's answer covered everything, the miss included
    CHECK(f.tier.stats().prefetch.taken_pages == 3);
    CHECK(f.tier.stats().lookups == 0);
    // Taken once: the next load of those pages goes to the store (timeout) or misses (best
    // effort, which never asks).
    const bool asks = policy == remote::PrefetchPolicy::kTimeout;
    CHECK(f.load(4, tokens, 1, 20) == (asks ? 3u : 0u));
    CHECK(f.shared.gets == gets + (asks ? 1 : 0));
  }
}

TEST_CASE("remote prefetch: the runtime's prefetch names the pages after the local match") {
  constexpr uint32_t P = TierFixture::P;
  TierFixture f(64, remote::PrefetchPolicy::kBestEffort);  // admit itself never asks the store
  std::vector<TokenId> prompt = iota_tokens(4 * P + 1, 40);
  f.write(0, prompt, 4, 0);
  TierConfig tiers;
  tiers.remote = &f.tier;
  PrefixCacheRuntime runtime(f.pool, {0, 1.0, 1.0}, tiers);
  // The first 2 pages cached locally (another request), so only pages 2 and 3 are prefetched.
  const std::vector<TokenId> stem(prompt.begin(), prompt.begin() + 2 * P + 1);
  const AdmitResult a = runtime.admit({1, 0, stem});
  REQUIRE(a.ok());
  REQUIRE(a.remote_hit_tokens == 0);  // nothing prefetched for it: best effort misses
  runtime.commit(a.seq, static_cast<uint32_t>(stem.size()));
  runtime.finish(a.seq);
  runtime.prefetch({2, 0, prompt});
  f.tier.drain();
  CHECK(f.tier.stats().prefetch.requests == 1);
  CHECK(f.tier.stats().prefetch.fetched_pages == 2);
  const AdmitResult b = runtime.admit({2, 0, prompt});
  REQUIRE(b.ok());
  CHECK(b.device_hit_tokens == 2 * P);
  CHECK(b.remote_hit_tokens == 2 * P);
  CHECK(b.reused_tokens == 4 * P);
  runtime.finish(b.seq);
  CHECK(runtime.check_accounting() == 0);
}

TEST_CASE("remote prefetch: one still in flight does not hold the load past the timeout") {
  const std::vector<TokenId> tokens = iota_tokens(4 * TierFixture::P, 900);
  for (const auto policy :
       {remote::PrefetchPolicy::kBestEffort, remote::PrefetchPolicy::kTimeout}) {
    CAPTURE(to_string(policy));
    TierFixture f(64, policy);
    f.write(0, tokens, 4, 0);
    f.shared.gate_timeout = std::chrono::milliseconds(2000);  // a store far slower than the wait
    f.shared.gate_closed = true;
    f.tier.prefetch(TierFixture::hashes_after(0, tokens, 0));
    const auto start = std::chrono::steady_clock::now();
    CHECK(f.load(0, tokens, 0) == 0);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // best_effort does not wait at all; timeout waits for the prefetch 100 ms (its wait), and
    // does not then ask the store itself for pages its prefetch is still fetching.
    if (policy == remote::PrefetchPolicy::kBestEffort) {
      CHECK(ms < 50);
    } else {
      CHECK(ms >= 95);
      CHECK(ms < 600);
    }
    CHECK(f.tier.stats().lookups == 0);
    f.shared.gate_closed = false;
    f.tier.drain();
    // The late answer is still there for the next admit of the request.
    CHECK(f.load(0, tokens, 0) == 4);
  }
}

TEST_CASE("remote prefetch: a corrupted value it fetched is a miss, counted, never served") {
  TierFixture f(64, remote::PrefetchPolicy::kTimeout);
  const std::vector<TokenId> tokens = iota_tokens(4 * TierFixture::P, 70);
  f.write(2, tokens, 4, 1);
  {
    std::lock_guard lock(f.shared.mutex);
    const std::vector<PageHash> hashes = TierFixture::hashes_after(2, tokens, 0);
    std::string& v =
        f.shared.values.at(remote::page_key("t", remote::layout_id(f.layout, ""), hashes[2]));
    v.back() = static_cast<char>(v.back() ^ 0x01);
  }
  f.tier.prefetch(TierFixture::hashes_after(2, tokens, 0));
  f.tier.drain();
  const uint64_t gets = f.shared.gets;
  CHECK(f.load(2, tokens, 0, 1) == 2);
  CHECK(f.tier.stats().bad_values == 1);
  CHECK(f.tier.stats().prefetch.taken_pages == 4);
  CHECK(f.shared.gets == gets);
}

TEST_CASE(
    "remote prefetch: a full queue drops the prefetch, counted, and the load then asks itself") {
  TierFixture f(64, remote::PrefetchPolicy::kTimeout);
  const std::vector<TokenId> tokens = iota_tokens(3 * TierFixture::P, 5);
  f.write(0, tokens, 3, 0);
  f.shared.gate_timeout = std::chrono::milliseconds(2000);
  f.shared.gate_closed = true;  // the reader thread holds its first lookup at the gate
  std::vector<TokenId> other = iota_tokens(3 * TierFixture::P, 5000);
  f.tier.prefetch(TierFixture::hashes_after(0, other, 0));  // in flight
  while (f.shared.at_gate == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int i = 0; i < 256; ++i) {  // queued: other pages each time (held pages are not asked again)
    f.tier.prefetch(
        TierFixture::hashes_after(0, iota_tokens(3 * TierFixture::P, 10000 + 100 * i), 0));
  }
  f.tier.prefetch(TierFixture::hashes_after(0, tokens, 0));  // dropped
  CHECK(f.tier.stats().prefetch.dropped == 1);
  f.shared.gate_closed = false;
  // Never prefetched: the load looks its pages up itself.
  CHECK(f.load(0, tokens, 0) == 3);
  CHECK(f.tier.stats().lookups == 1);
}

// Byte b of page i of a prompt whose tokens are `tokens`: what the "model" computed there.
std::byte page_byte(const std::vector<TokenId>& tokens, uint32_t i) {
  return static_cast<std::byte>(tokens[size_t{i} * TierFixture::P] & 0xff);
}

TEST_CASE(
    "remote tier: write-through writes each computed page once, when cached, bytes and all, "
    "write-back only when it is dropped") {
  constexpr uint32_t P = TierFixture::P;
  const std::vector<TokenId> first = iota_tokens(13, 100);            // 3 whole pages
  std::vector<TokenId> second(first.begin(), first.begin() + 2 * P);  // shares 2 pages
  for (TokenId t : iota_tokens(5, 500)) second.push_back(t);          // and adds 1
  for (const bool through : {false, true}) {
    CAPTURE(through);
    testing::MemoryStore::Shared shared;
    const KvLayout layout{1, 1, 4, 2, P};
    PagePool pool(layout, 32, make_host_backend());
    remote::RemoteTierConfig config{"t", layout, "", 0, 64, 8};
    config.write_through = through;
    remote::RemoteTier tier(std::make_unique<testing::MemoryStore>(shared),
                            std::make_unique<testing::MemoryStore>(shared), config);
    {
      TierConfig tiers;
      tiers.remote = &tier;
      PrefixCacheRuntime runtime(pool, {0, 1.0, 1.0}, tiers);
      for (const std::vector<TokenId>& prompt : {first, second}) {
        const AdmitResult r = runtime.admit({0, 0, prompt});
        REQUIRE(r.ok());
        // "Compute" the pages after the reused ones, then cache them.
        for (uint32_t i = r.reused_tokens / P; i < r.block_table.size(); ++i) {
          for (std::byte& b : pool.host_bytes(r.block_table[i])) b = page_byte(prompt, i);
        }
        runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
        runtime.finish(r.seq);
      }
      tier.drain();
      REQUIRE(runtime.cached_pages() == 4);
      CHECK(tier.stats().stored_pages == (through ? 4u : 0u));
      CHECK(shared.values.size() == (through ? 4u : 0u));
      // Dropping them all: write-back writes them now; write-through knows the store has them.
      CHECK(runtime.evict(4) == 4);
      tier.drain();
      CHECK(tier.stats().stored_pages == 4);
      CHECK(tier.stats().known_skipped == (through ? 4u : 0u));
      CHECK(shared.values.size() == 4);
    }
    // What was written is each page's bytes as computed: another tier loads them back, checked.
    remote::RemoteTier reader(std::make_unique<testing::MemoryStore>(shared),
                              std::make_unique<testing::MemoryStore>(shared), config);
    for (const std::vector<TokenId>& prompt : {first, second}) {
      std::vector<PageHash> hashes;
      const PageHash parent = chain_page_hashes(0, prompt, P, 0, 3, hashes);
      std::vector<PageId> ids;
      REQUIRE(pool.allocate(3, ids));
      REQUIRE(reader.load(parent, hashes, prompt, pool, ids) == 3);
      for (uint32_t i = 0; i < 3; ++i) {
        for (std::byte b : pool.host_bytes(ids[i])) REQUIRE(b == page_byte(prompt, i));
      }
      pool.release(ids);
    }
    CHECK(reader.stats().bad_values == 0);
  }
}

TEST_CASE("engine replay: the time admit waits for the remote store is on the simulated clock") {
  tools::GenConfig gen = testing::small_gen_config(11);
  gen.conversations = 40;
  const tools::Trace trace = testing::generated_trace(gen);
  const auto replay = [&](std::chrono::microseconds delay) {
    testing::MemoryStore::Shared shared;  // empty: every lookup misses, the same in both runs
    shared.get_delay = delay;
    const KvLayout layout{1, 1, 4, 2, TierFixture::P};
    remote::RemoteTier tier(std::make_unique<testing::MemoryStore>(shared),
                            std::make_unique<testing::MemoryStore>(shared),
                            remote::RemoteTierConfig{"t", layout, "", 0, 1u << 16, 64});
    tools::EngineReplayConfig config;
    config.layout = layout;
    config.model = "test";
    config.pool_pages = 4096;
    config.compare_no_cache = false;
    config.remote = &tier;
    tools::ReplayResult r = tools::replay_engine(trace, config);
    const remote::RemoteTierStats s = tier.stats();
    REQUIRE(s.lookups > 10);
    CHECK(r.ok());
    CHECK(r.remote.hit_tokens == 0);
    return std::pair(r, s);
  };
  const auto [fast, fast_stats] = replay(std::chrono::microseconds(0));
  const auto [slow, slow_stats] = replay(std::chrono::microseconds(3000));
  CHECK(slow_stats.load_wait_ns >= slow_stats.lookups * 3'000'000);
  // Each lookup stalls the step that made it by 3 ms: the first tokens come later.
  CHECK(slow.engine.run.ttft_mean_s > fast.engine.run.ttft_mean_s + 0.001);
  CHECK(slow.engine.run.ttft_max_s > fast.engine.run.ttft_max_s);
}

TEST_CASE("remote tier: a write queue or batch of no pages is refused") {
  testing::MemoryStore::Shared shared;
  const auto make = [&](std::size_t queue, std::size_t batch) {
    return remote::RemoteTier(std::make_unique<testing::MemoryStore>(shared),
                              std::make_unique<testing::MemoryStore>(shared),
                              remote::RemoteTierConfig{"t", {}, "", 0, queue, batch});
  };
  CHECK_THROWS_WITH_AS(make(0, 1), doctest::Contains("at least 1 page"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(make(1, 0), doctest::Contains("at least 1 page"), std::invalid_argument);
}

}  // namespace
}  // namespace radixkv
