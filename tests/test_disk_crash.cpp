// The disk tier killed at random points: a child process writes pages (forked from the test, on
// the same path each time) and is killed with SIGKILL after a random delay; after each kill the
// path is opened again, as a restarted server would, and
//   - its files never hold more than the capacity;
//   - every page the restarted tier serves has exactly its bytes (a torn or half-written slot is a
//     counted miss), checked page by page against the deterministic fill;
//   - end to end: a tiny transformer runs conversations through a runtime on the disk tier, is
//     killed, and the restarted runtime's logits from pages read back are bitwise equal to
//     from-scratch ones.
// RADIXKV_DISK_CRASH_KILLS sets the kills of each case (default 8, for CI; 60 by hand:
//   RADIXKV_DISK_CRASH_KILLS=60 build/tests/test_disk_crash).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <random>

#include "disk/disk_tier.h"
#include "runtime/prefix_cache_runtime.h"
#include "tests/disk_fixture.h"
#include "tests/runtime_conversation.h"
#include "tests/tiny_transformer.h"

namespace radixkv {
namespace {

using disk::DiskTier;
using disk::DiskTierConfig;
using testing::PagePath;

int kills() {
  const char* env = std::getenv("RADIXKV_DISK_CRASH_KILLS");
  return env != nullptr ? std::max(1, std::atoi(env)) : 8;
}

// Pages of 128 KiB (33 blocks a slot): long enough writes that a kill lands inside some.
const KvLayout kBig{4, 8, 64, 2, 16};
constexpr uint32_t kSlots = 48;

// The I/O each case runs the writer with: io_uring and pread/pwrite with O_DIRECT, and pwrite
// through the page cache (a buffered write the signal interrupts between pages: a torn slot).
struct WriterIo {
  disk::IoMode io;
  bool direct;
};
const WriterIo kWriterIos[] = {
    {disk::IoMode::kUring, true}, {disk::IoMode::kSync, true}, {disk::IoMode::kSync, false}};

DiskTierConfig big_config(const std::string& dir, WriterIo w) {
  DiskTierConfig c{dir, kBig, "crash",
                   disk::SlotFile::kManifestBytes +
                       kSlots * disk::SlotGeometry{16, kBig.bytes_per_page()}.slot_bytes()};
  c.io = w.io;
  c.direct = w.direct;
  c.write_policy = "write_through";
  return c;
}

// The paths child `seed` writes: eight families of paths that share prefixes, in namespaces 0-2.
PagePath writer_path(std::mt19937_64& rng) {
  const auto family = static_cast<TokenId>(rng() % 8);
  const auto pages = static_cast<uint32_t>(1 + rng() % 6);
  std::vector<TokenId> tokens(size_t{pages} * 16);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    // The first pages follow the family, the rest diverge.
    tokens[i] = i < 32 ? family * 100 + TokenId(i) : TokenId(rng() % 50000);
  }
  return {static_cast<Namespace>(family % 3), std::move(tokens), 16};
}

void writer(const std::string& dir, WriterIo io, uint64_t seed,
            const std::function<void()>& writing) {
  DiskTier tier(big_config(dir, io));
  PagePool pool(kBig, 16, make_host_backend());
  tier.attach_pools(&pool, nullptr);
  std::mt19937_64 rng(seed);
  for (;;) {
    const PagePath path = writer_path(rng);
    testing::feed_pages(tier, pool, path, 0, path.pages());
    writing();
  }
}

// Opens the path after a kill and checks every page on file: the tier serves it with exactly its
// bytes, or not at all. Returns the pages served.
uint64_t check_after_kill(const std::string& dir, WriterIo io, uint64_t& torn) {
  const DiskTierConfig config = big_config(dir, io);
  CHECK(testing::disk_bytes(dir) <= config.capacity_bytes);
  DiskTier tier(config);
  torn += tier.stats().bad_pages;
  PagePool pool(kBig, 1, make_host_backend());
  tier.attach_pools(&pool, nullptr);
  const std::string file = dir + "/" + disk::SlotFile::kSlotsName;
  const int fd = ::open(file.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  std::vector<std::byte> head(tier.geometry().head_bytes());
  std::vector<TokenId> tokens(16);
  uint64_t served = 0;
  for (uint32_t s = 0; s < kSlots; ++s) {
    REQUIRE(::pread(fd, head.data(), head.size(), off_t(s * tier.geometry().slot_bytes())) ==
            ssize_t(head.size()));
    disk::SlotHeader h;
    if (disk::check_slot_head(head, tier.layout_id(), tier.geometry(), h) != disk::SlotCheck::kOk) {
      continue;
    }
    disk::slot_tokens(head, tokens);
    std::vector<PageId> page;
    REQUIRE(pool.allocate(1, page));
    const uint64_t bad_before = tier.stats().bad_pages;
    const uint32_t loaded = tier.load(h.parent, {&h.hash, 1}, tokens, pool, page);
    if (loaded == 1) {
      ++served;
      CHECK(testing::holds_page(pool.host_bytes(page[0]), h.hash));
    } else if (tier.holds(h.hash) || tier.stats().bad_pages > bad_before) {
      ++torn;  // indexed but failed its checks at load: a miss, counted
    }
    pool.release(page);
  }
  ::close(fd);
  tier.verify(testing::no_trie_pages);
  return served;
}

TEST_CASE("disk crash: a writer killed at random points, restarted, serves only whole pages" *
          doctest::timeout(120)) {
  if (const auto why = testing::io_uring_missing()) RADIXKV_SKIP_OUTSIDE_CI(*why);
  for (const WriterIo io : kWriterIos) {
    const std::string mode =
        fmt::format("{}{}", disk::to_string(io.io), io.direct ? "" : ", buffered");
    CAPTURE(mode);
    const std::string dir = testing::disk_dir("crash");
    std::mt19937_64 rng(7);
    uint64_t served = 0;
    uint64_t torn = 0;
    for (int k = 0; k < kills(); ++k) {
      const auto delay = std::chrono::microseconds(rng() % 20000);
      testing::run_and_kill(
          [&](const auto& writing) { writer(dir, io, 100 + uint64_t(k), writing); }, delay);
      served += check_after_kill(dir, io, torn);
    }
    MESSAGE(mode << ": " << kills() << " kills, " << served << " pages served, " << torn
                 << " torn or bad slots refused");
    CHECK(served > 0);
  }
}

// Conversations of child `seed`: a system prompt shared by all, then turns of random tokens.
std::vector<std::vector<TokenId>> conversations(uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  std::vector<TokenId> system(13);
  for (TokenId& t : system) t = TokenId(rng() % 256);
  std::vector<std::vector<TokenId>> prompts;
  for (int c = 0; c < count; ++c) {
    std::vector<TokenId> prompt = system;
    for (int turn = 0; turn < 3; ++turn) {
      for (int i = 0; i < 6 + c % 5 + turn; ++i) prompt.push_back(TokenId(rng() % 256));
      prompts.push_back(prompt);
    }
  }
  return prompts;
}

constexpr uint32_t kTinyPage = 4;

DiskTierConfig tiny_config(const std::string& dir, const testing::TinyTransformer& model) {
  DiskTierConfig c{dir, model.kv_layout(kTinyPage), "tiny",
                   disk::SlotFile::kManifestBytes + 96 * disk::kBlockBytes};
  c.write_policy = "write_through";
  return c;
}

// Runs the prompts through a runtime on `tier`; `turn_done` after each turn.
std::vector<testing::TurnLog> run_turns(
    DiskTier& tier, const testing::TinyTransformer& model,
    const std::vector<std::vector<TokenId>>& prompts,
    const std::function<void()>& turn_done = [] {}) {
  PagePool pool(model.kv_layout(kTinyPage), 64, make_host_backend());
  TierConfig tiers;
  tiers.remote = &tier;
  PrefixCacheRuntime runtime(pool, {}, tiers);
  std::vector<testing::TurnLog> logs;
  for (const auto& prompt : prompts) {
    testing::ActiveTurn turn(runtime, pool, model, 0, prompt, {});
    while (turn.step()) {
    }
    logs.push_back(turn.log());
    turn_done();
  }
  return logs;
}

TEST_CASE(
    "disk crash: tiny-transformer logits from pages read back after a kill are bitwise equal "
    "to from-scratch ones" *
    doctest::timeout(120)) {
  const testing::TinyTransformer model(testing::TinyConfig{}, 11);
  const std::string dir = testing::disk_dir("tiny");
  std::mt19937_64 rng(3);
  uint64_t disk_tokens = 0;
  uint64_t rows = 0;
  for (int k = 0; k < kills(); ++k) {
    const uint64_t seed = 1 + rng() % 4;  // conversations another kill wrote too, now and then
    const auto delay = std::chrono::microseconds(rng() % 20000);
    testing::run_and_kill(
        [&](const auto& writing) {
          DiskTier tier(tiny_config(dir, model));
          for (uint64_t round = 0;; ++round) {
            run_turns(tier, model, conversations(seed + round, 12), writing);
          }
        },
        delay);
    DiskTier tier(tiny_config(dir, model));
    for (const testing::TurnLog& log : run_turns(tier, model, conversations(seed, 12))) {
      disk_tokens += log.remote_hit_tokens;
      const testing::Comparison c = testing::compare_with_reference(model, log);
      rows += c.rows;
      CHECK(c.bitwise_equal_rows == c.rows);
    }
    CHECK(tier.stats().bad_pages == 0);  // one-block slots: written whole or not at all
  }
  MESSAGE(kills() << " kills: " << disk_tokens << " tokens from disk, " << rows
                  << " rows compared");
  CHECK(disk_tokens > 0);
}

}  // namespace
}  // namespace radixkv
