// The disk tier (disk/disk_tier.h) on files under the test's scratch folder: pages written as they
// leave the trie and read back byte for byte (io_uring and pread/pwrite; where io_uring is
// refused, pread/pwrite saying why), a restart serving them at once, another layout refused, the
// byte budget and LRU over disk leaves, corrupted and torn slots as counted misses, the prefix
// rule, write policies under a runtime (with and without a host tier), and the configuration's
// errors.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <map>
#include <sstream>
#include <system_error>

#include "disk/disk_tier.h"
#include "runtime/lower_tiers.h"
#include "runtime/prefix_cache_runtime.h"
#include "tests/cache_fixture.h"
#include "tests/disk_fixture.h"
#include "tests/test_copier.h"

namespace radixkv {
namespace {

using disk::DiskTier;
using disk::DiskTierConfig;
using testing::PagePath;

constexpr uint32_t P = 4;
const KvLayout kLayout{1, 1, 4, 2, P};  // 64-byte pages: one 4 KiB slot each
constexpr uint64_t kSlot = 4096;

DiskTierConfig config_for(const std::string& dir, uint64_t slots, std::string write = "write_back",
                          disk::IoMode io = disk::IoMode::kAuto) {
  DiskTierConfig c{dir, kLayout, "m", disk::SlotFile::kManifestBytes + slots * kSlot};
  c.write_policy = std::move(write);
  c.io = io;
  return c;
}

// Every slot's page, read from the file as a reader would: hash -> slot.
std::map<PageHash, uint32_t> slots_on_file(const DiskTier& tier) {
  std::map<PageHash, uint32_t> slots;
  const std::string file = tier.config().path + "/" + disk::SlotFile::kSlotsName;
  const int fd = ::open(file.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  std::vector<std::byte> head(tier.geometry().head_bytes());
  for (uint32_t s = 0; s < tier.stats().slots; ++s) {
    REQUIRE(::pread(fd, head.data(), head.size(), off_t(s * tier.geometry().slot_bytes())) ==
            ssize_t(head.size()));
    disk::SlotHeader header;
    if (disk::check_slot_head(head, tier.layout_id(), tier.geometry(), header) ==
        disk::SlotCheck::kOk) {
      slots[header.hash] = s;
    }
  }
  ::close(fd);
  return slots;
}

void flip_byte(const DiskTier& tier, uint32_t slot, uint64_t at) {
  const std::string file = tier.config().path + "/" + disk::SlotFile::kSlotsName;
  const int fd = ::open(file.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  const off_t offset = off_t(slot * tier.geometry().slot_bytes() + at);
  std::byte b;
  REQUIRE(::pread(fd, &b, 1, offset) == 1);
  b ^= std::byte{0x40};
  REQUIRE(::pwrite(fd, &b, 1, offset) == 1);
  ::close(fd);
}

TEST_CASE("disk tier: pages that leave the trie load back byte for byte (io_uring and pread)") {
  if (const auto why = testing::io_uring_missing()) RADIXKV_SKIP_OUTSIDE_CI(*why);
  for (const disk::IoMode io : {disk::IoMode::kUring, disk::IoMode::kSync}) {
    CAPTURE(disk::to_string(io));
    PagePool pool(kLayout, 64, make_host_backend());
    DiskTier tier(config_for(testing::disk_dir("bytes"), 64, "write_back", io));
    tier.attach_pools(&pool, nullptr);
    CHECK(tier.describe().find(io == disk::IoMode::kUring ? "io_uring" : "pread/pwrite") !=
          std::string::npos);
    const PagePath path = PagePath::counting(0, 10, P);
    testing::feed_pages(tier, pool, path, 0, 10);
    tier.drain();
    CHECK(tier.stats().written_pages == 10);
    CHECK(tier.stats().written_bytes == 10 * kSlot);
    uint64_t wrong = 0;
    CHECK(testing::load_pages(tier, pool, path, 0, 10, &wrong) == 10);
    CHECK(testing::load_pages(tier, pool, path, 3, 7, &wrong) == 7);
    CHECK(wrong == 0);
    CHECK(tier.stats().loaded_pages == 17);
    CHECK(tier.stats().read_bytes == 17 * kSlot);
    // Pages another request expects: another parent, other tokens, another namespace.
    std::vector<PageId> pages;
    REQUIRE(pool.allocate(7, pages));
    CHECK(tier.load(path.seed, std::span(path.hashes).subspan(3), path.tokens_from(3), pool,
                    pages) == 0);
    pool.release(pages);
    std::vector<TokenId> other(path.tokens.begin(), path.tokens.end() - 1);
    other.push_back(999);
    CHECK(testing::load_pages(tier, pool, PagePath(0, other, P), 0, 10) == 9);
    CHECK(testing::load_pages(tier, pool, PagePath::counting(1, 10, P), 0, 10) == 0);
    CHECK(tier.stats().bad_pages == 0);
    tier.verify(testing::no_trie_pages);
    CHECK(pool.free_pages() == 64);
  }
}

// Makes io_uring_setup fail with EPERM in this process from now on, as a seccomp filter of a
// container or kernel.io_uring_disabled does; false when the kernel takes no filter.
bool refuse_io_uring() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

TEST_CASE(
    "disk tier: where io_uring is refused, auto mode uses pread/pwrite and says why, io_uring mode "
    "is refused naming the path") {
  // In a child process, since the filter lasts as long as the process. It writes back what the
  // tier said: its description, pages loaded and wrong ones, and io_uring mode's refusal.
  const std::string dir = testing::disk_dir("no-uring");
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(out[0]);
    if (!refuse_io_uring()) ::_exit(2);
    std::string said;
    try {
      {
        PagePool pool(kLayout, 16, make_host_backend());
        DiskTier tier(config_for(dir, 16));
        tier.attach_pools(&pool, nullptr);
        const PagePath path = PagePath::counting(0, 4, P);
        testing::feed_pages(tier, pool, path, 0, 4);
        tier.drain();
        uint64_t wrong = 0;
        const uint32_t loaded = testing::load_pages(tier, pool, path, 0, 4, &wrong);
        said = fmt::format("{}\n{} loaded, {} wrong\n", tier.describe(), loaded, wrong);
      }
      try {
        DiskTier tier(config_for(dir, 16, "write_back", disk::IoMode::kUring));
        said += "io_uring mode opened";
      } catch (const disk::IoUringUnavailable& e) {
        said += e.what();
      }
    } catch (const std::exception& e) {
      said += fmt::format("failed: {}", e.what());
    }
    const bool sent = ::write(out[1], said.data(), said.size()) == ssize_t(said.size());
    ::_exit(sent ? 0 : 3);
  }
  ::close(out[1]);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) said.append(buffer, size_t(n));
  ::close(out[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 2) RADIXKV_SKIP_OUTSIDE_CI("this kernel takes no seccomp filter");
  REQUIRE(WEXITSTATUS(status) == 0);
  INFO(said);
  const std::string why =
      fmt::format("io_uring unavailable here, io_uring_queue_init: {}", std::strerror(EPERM));
  CHECK(said.starts_with(dir + " (pread/pwrite, "));
  CHECK(said.find(why + ")\n4 loaded, 0 wrong\n") != std::string::npos);
  CHECK(said.ends_with(fmt::format("\ndisk tier {}: {}", dir, why)));
}

TEST_CASE("disk tier: a page still being written is served from its buffer") {
  PagePool pool(kLayout, 64, make_host_backend());
  DiskTier tier(config_for(testing::disk_dir("inflight"), 64));
  tier.attach_pools(&pool, nullptr);
  const PagePath path = PagePath::counting(0, 6, P);
  // No flush: the writes are queued, not yet submitted or done.
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(6, pages));
  tier.stored(Tier::kDevice, 0, std::nullopt, path.hashes, path.tokens);
  for (uint32_t i = 6; i-- > 0;) {
    testing::fill_page(path.hashes[i], pool.host_bytes(pages[i]));
    testing::drop_page(tier, path, i, pages[i]);
  }
  // The pool pages are reused at once (the tier copied the bytes when the page was dropped).
  for (PageId p : pages) std::memset(pool.host_bytes(p).data(), 0, pool.bytes_per_page());
  pool.release(pages);
  uint64_t wrong = 0;
  CHECK(testing::load_pages(tier, pool, path, 0, 6, &wrong) == 6);
  CHECK(wrong == 0);
  tier.drain();
  CHECK(tier.stats().written_pages == 6);
  CHECK(testing::load_pages(tier, pool, path, 0, 6, &wrong) == 6);
  CHECK(wrong == 0);
}

TEST_CASE("disk tier: a restart serves every page at once, and a second process is refused") {
  const std::string dir = testing::disk_dir("restart");
  PagePool pool(kLayout, 64, make_host_backend());
  const PagePath a = PagePath::counting(0, 12, P);
  const PagePath b = PagePath::counting(7, 8, P, 5000);
  {
    DiskTier tier(config_for(dir, 64));
    CHECK(tier.stats().recovered_pages == 0);
    tier.attach_pools(&pool, nullptr);
    testing::feed_pages(tier, pool, a, 0, 12);
    testing::feed_pages(tier, pool, b, 0, 8);
    // A second process on the same path while this one has it: refused.
    CHECK_THROWS_WITH_AS(DiskTier(config_for(dir, 64)), doctest::Contains("in use by another"),
                         std::system_error);
  }
  DiskTier tier(config_for(dir, 64));
  CHECK(tier.stats().recovered_pages == 20);
  CHECK(tier.stats().bad_pages == 0);
  CHECK(tier.stats().recovery_ns > 0);
  uint64_t wrong = 0;
  CHECK(testing::load_pages(tier, pool, a, 0, 12, &wrong) == 12);
  CHECK(testing::load_pages(tier, pool, b, 0, 8, &wrong) == 8);
  CHECK(wrong == 0);
  tier.verify(testing::no_trie_pages);

  // New pages after the restart get newer generations than every page recovered: a page written
  // again into another slot would otherwise lose to its old copy at the next recovery.
  const PagePath c = PagePath::counting(0, 3, P, 9000);
  testing::feed_pages(tier, pool, c, 0, 3);
  tier.drain();
  CHECK(tier.stats().written_pages == 3);
}

TEST_CASE("disk tier: a restart with another capacity cuts or grows the file to it") {
  const std::string dir = testing::disk_dir("capacity");
  PagePool pool(kLayout, 64, make_host_backend());
  const PagePath a = PagePath::counting(0, 12, P);
  {
    DiskTier tier(config_for(dir, 16));
    tier.attach_pools(&pool, nullptr);
    testing::feed_pages(tier, pool, a, 0, 12);  // slots 0..11: the last page first
  }
  {
    DiskTier tier(config_for(dir, 6));  // slots 0..5 stay: pages 11 down to 6, without a root
    CHECK(tier.stats().slots == 6);
    CHECK(testing::disk_bytes(dir) <= config_for(dir, 6).capacity_bytes);
    CHECK(tier.stats().recovered_pages == 0);
    CHECK(tier.stats().unreachable == 6);
    tier.attach_pools(&pool, nullptr);
    testing::feed_pages(tier, pool, a, 0, 3);
  }
  DiskTier tier(config_for(dir, 40));
  CHECK(tier.stats().slots == 40);
  CHECK(testing::disk_bytes(dir) == config_for(dir, 40).capacity_bytes);
  CHECK(tier.stats().recovered_pages == 3);
  uint64_t wrong = 0;
  tier.attach_pools(&pool, nullptr);
  CHECK(testing::load_pages(tier, pool, a, 0, 12, &wrong) == 3);
  CHECK(wrong == 0);
}

TEST_CASE("disk tier: another layout, page size or model on a path is refused, the path kept") {
  const std::string dir = testing::disk_dir("layout");
  PagePool pool(kLayout, 16, make_host_backend());
  const PagePath a = PagePath::counting(0, 4, P);
  {
    DiskTier tier(config_for(dir, 16));
    tier.attach_pools(&pool, nullptr);
    testing::feed_pages(tier, pool, a, 0, 4);
  }
  DiskTierConfig other_pages = config_for(dir, 16);
  other_pages.layout.page_tokens = 8;
  CHECK_THROWS_WITH_AS(DiskTier{other_pages},
                       doctest::Contains("pages of two layouts are never mixed"),
                       std::invalid_argument);
  DiskTierConfig other_shape = config_for(dir, 16);
  other_shape.layout.kv_heads = 2;
  CHECK_THROWS_WITH_AS(DiskTier{other_shape}, doctest::Contains("2 kv heads"),
                       std::invalid_argument);
  DiskTierConfig other_model = config_for(dir, 16);
  other_model.model = "another";
  CHECK_THROWS_WITH_AS(DiskTier{other_model}, doctest::Contains("model 'm'"),
                       std::invalid_argument);
  DiskTierConfig other_payload = config_for(dir, 16);
  other_payload.payload_bytes = 8192;  // (the layout's pages are 64 bytes)
  CHECK_THROWS_AS(DiskTier{other_payload}, std::invalid_argument);
  // Nothing was touched: the pages are all there, and a smaller capacity keeps what fits.
  {
    DiskTier tier(config_for(dir, 16));
    CHECK(tier.stats().recovered_pages == 4);
  }
  const std::string manifest = dir + "/" + disk::SlotFile::kManifestName;
  {
    const int fd = ::open(manifest.c_str(), O_WRONLY | O_TRUNC);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "junk\n", 5) == 5);
    ::close(fd);
  }
  CHECK_THROWS_WITH_AS(DiskTier(config_for(dir, 16)),
                       doctest::Contains("not a radixkv disk tier manifest"),
                       std::invalid_argument);
}

TEST_CASE(
    "disk tier: never more bytes on disk than its capacity, LRU evicting the oldest disk leaves") {
  const std::string dir = testing::disk_dir("budget");
  PagePool pool(kLayout, 64, make_host_backend());
  DiskTierConfig config = config_for(dir, 8);
  config.capacity_bytes += kSlot - 1;  // not a ninth slot
  DiskTier tier(config);
  tier.attach_pools(&pool, nullptr);
  CHECK(tier.stats().slots == 8);
  const PagePath a = PagePath::counting(0, 4, P, 0);
  const PagePath b = PagePath::counting(0, 4, P, 1000);
  const PagePath c = PagePath::counting(0, 4, P, 2000);
  const PagePath d = PagePath::counting(0, 4, P, 3000);
  const auto on_disk = [&](const PagePath& path) {
    uint32_t n = 0;
    for (const PageHash& h : path.hashes) n += tier.holds(h);
    return n;
  };
  // (Drained after each feed: a page whose write is in flight is not evictable, so which page
  // goes would depend on the drive's timing.)
  testing::feed_pages(tier, pool, a, 0, 4);
  tier.drain();
  testing::feed_pages(tier, pool, b, 0, 4);
  tier.drain();
  CHECK(testing::disk_bytes(dir) <= config.capacity_bytes);
  testing::feed_pages(tier, pool, c, 0, 4);  // a, the least recent, goes: leaf first
  tier.drain();
  CHECK(on_disk(a) == 0);
  CHECK(on_disk(b) == 4);
  CHECK(on_disk(c) == 4);
  CHECK(tier.stats().evictions == 4);
  CHECK(testing::load_pages(tier, pool, b, 0, 4) == 4);  // b is now more recent than c
  testing::feed_pages(tier, pool, d, 0, 2);
  CHECK(on_disk(c) == 2);  // c's two last pages (its leaves) went
  CHECK(tier.holds(c.hashes[0]));
  CHECK(tier.holds(c.hashes[1]));
  CHECK(on_disk(b) == 4);
  tier.drain();
  CHECK(testing::disk_bytes(dir) <= config.capacity_bytes);
  tier.verify(testing::no_trie_pages);
}

TEST_CASE(
    "disk tier: a corrupted payload is a counted miss, never served, and a torn header is "
    "not recovered") {
  const std::string dir = testing::disk_dir("corrupt");
  PagePool pool(kLayout, 64, make_host_backend());
  const PagePath path = PagePath::counting(0, 6, P);
  std::map<PageHash, uint32_t> slots;
  {
    DiskTier tier(config_for(dir, 16));
    tier.attach_pools(&pool, nullptr);
    testing::feed_pages(tier, pool, path, 0, 6);
    tier.drain();
    slots = slots_on_file(tier);
    REQUIRE(slots.size() == 6);
    flip_byte(tier, slots.at(path.hashes[3]), tier.geometry().payload_at() + 5);
    uint64_t wrong = 0;
    CHECK(testing::load_pages(tier, pool, path, 0, 6, &wrong) == 3);
    CHECK(wrong == 0);
    CHECK(tier.stats().bad_pages == 1);
    // The bad page left the index, and the pages below it with it: nothing of them is read again.
    CHECK_FALSE(tier.holds(path.hashes[3]));
    CHECK_FALSE(tier.holds(path.hashes[4]));
    CHECK(tier.stats().unreachable == 2);
    CHECK(testing::load_pages(tier, pool, path, 3, 3) == 0);
    CHECK(tier.stats().bad_pages == 1);
    tier.verify(testing::no_trie_pages);
  }
  {
    // Restarted: page 3's slot still fails (a miss at load: the scan reads heads only)...
    DiskTier tier(config_for(dir, 16));
    tier.attach_pools(&pool, nullptr);
    CHECK(tier.stats().recovered_pages == 6);
    CHECK(testing::load_pages(tier, pool, path, 0, 6) == 3);
    CHECK(tier.stats().bad_pages == 1);
    flip_byte(tier, slots.at(path.hashes[1]), 20);  // ... and a torn header of page 1
  }
  DiskTier tier(config_for(dir, 16));
  tier.attach_pools(&pool, nullptr);
  CHECK(tier.stats().bad_pages == 1);        // page 1, at the scan
  CHECK(tier.stats().recovered_pages == 1);  // page 0; 2 to 5 cannot be reached without 1
  CHECK(tier.stats().unreachable == 4);
  uint64_t wrong = 0;
  CHECK(testing::load_pages(tier, pool, path, 0, 6, &wrong) == 1);
  CHECK(wrong == 0);
}

TEST_CASE("disk tier: a slot torn by a crash (a new head over the old payload) is never served") {
  const KvLayout layout{1, 1, 512, 2, P};  // 8 KiB pages: three blocks a slot
  const std::string dir = testing::disk_dir("torn");
  PagePool pool(layout, 16, make_host_backend());
  const DiskTierConfig config{dir, layout, "m", disk::SlotFile::kManifestBytes + 16 * 3 * kSlot};
  const PagePath a = PagePath::counting(0, 4, P);
  // b shares a's first three pages; its page 3 is another child of a's page 2.
  PagePath b = PagePath::counting(0, 3, P).prefix_then(testing::iota_tokens(P, 500));
  {
    DiskTier tier(config);
    tier.attach_pools(&pool, nullptr);
    testing::feed_pages(tier, pool, a, 0, 4);
    tier.drain();
    // What a crash in the middle of writing b's page 3 into a's page 3's slot leaves: the first
    // block of the new slot (header, tokens, the payload's start) over the old one's.
    const uint32_t slot = slots_on_file(tier).at(a.hashes[3]);
    std::vector<std::byte> bytes(tier.geometry().slot_bytes());
    std::vector<std::byte> payload(layout.bytes_per_page());
    testing::fill_page(b.hashes[3], payload);
    disk::SlotHeader header{tier.layout_id(), 1000, b.hashes[3], b.hashes[2], false, 0};
    disk::encode_slot(bytes, tier.geometry(), header, b.page_tokens_of(3), payload);
    const std::string file = dir + "/" + disk::SlotFile::kSlotsName;
    const int fd = ::open(file.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, bytes.data(), kSlot, off_t(slot * bytes.size())) == ssize_t(kSlot));
    ::close(fd);
  }
  DiskTier tier(config);
  tier.attach_pools(&pool, nullptr);
  CHECK(tier.stats().recovered_pages == 4);  // the torn head checks out: it is indexed
  uint64_t wrong = 0;
  CHECK(testing::load_pages(tier, pool, b, 0, 4, &wrong) == 3);  // its payload does not
  CHECK(tier.stats().bad_pages == 1);
  CHECK(testing::load_pages(tier, pool, a, 0, 4, &wrong) == 3);
  CHECK(wrong == 0);
  CHECK_FALSE(tier.holds(b.hashes[3]));
}

TEST_CASE("disk tier: the prefix rule: no page kept after its parent left every tier unwritten") {
  PagePool pool(kLayout, 64, make_host_backend());
  const PagePath path = PagePath::counting(0, 5, P);

  // write_through_selective:hits=2: only pages that entered the device twice are written. Pages
  // 0 to 4 are cached, and 2 to 4 enter the device again.
  DiskTier tier(config_for(testing::disk_dir("rule"), 64, "write_through_selective:hits=2"));
  tier.attach_pools(&pool, nullptr);
  testing::feed_pages(tier, pool, path, 0, 5, /*drop=*/false);
  tier.stored(Tier::kDevice, 0, path.hashes[1], std::span(path.hashes).subspan(2), {});
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(5, pages));

  SUBCASE("a parent that leaves the trie unwritten takes the pages below it on disk") {
    // Pages 4, 3, 2 are written as they leave; 1 is not, and takes them.
    for (uint32_t i = 5; i-- > 2;) testing::drop_page(tier, path, i, pages[i]);
    CHECK(tier.holds(path.hashes[2]));
    CHECK(tier.holds(path.hashes[4]));
    testing::drop_page(tier, path, 1, pages[1]);
    for (uint32_t i = 1; i < 5; ++i) CHECK_FALSE(tier.holds(path.hashes[i]));
    CHECK(tier.stats().unreachable == 3);
    testing::drop_page(tier, path, 0, pages[0]);
    tier.flush();
    tier.verify(testing::no_trie_pages);
    CHECK(tier.stats().skipped_writes == 2);  // pages 1 and 0
  }
  SUBCASE("in parent-first order, a child of a lost parent is not written at all") {
    for (uint32_t i = 1; i < 5; ++i) testing::drop_page(tier, path, i, pages[i]);  // as a subtree
    tier.flush();
    for (uint32_t i = 1; i < 5; ++i) CHECK_FALSE(tier.holds(path.hashes[i]));
    CHECK(tier.stats().unreachable == 0);
    CHECK(tier.stats().skipped_writes == 4);
  }
  pool.release(pages);
}

TEST_CASE("disk tier: the prefix rule: pages reachable only through the trie go with it") {
  PagePool pool(kLayout, 64, make_host_backend());
  const PagePath path = PagePath::counting(0, 5, P);
  const PagePath whole = PagePath::counting(0, 3, P, 7000);
  for (const std::string how : {"cleared", "attach", "restart"}) {
    CAPTURE(how);
    const std::string dir = testing::disk_dir("rule");
    {
      DiskTier tier(config_for(dir, 64));
      tier.attach_pools(&pool, nullptr);
      // Pages 0 and 1 of `path` stay in the trie; 2 to 4 leave it and are written.
      testing::feed_pages(tier, pool, path, 0, 2, /*drop=*/false);
      testing::feed_pages(tier, pool, path, 2, 3);
      testing::feed_pages(tier, pool, whole, 0, 3);
      tier.verify([&](const PageHash& h) { return h == path.hashes[1]; });
      CHECK(tier.holds(path.hashes[4]));
      if (how != "restart") {
        if (how == "cleared") tier.cleared();
        if (how == "attach") tier.attach_pools(&pool, nullptr);
        CHECK(tier.stats().unreachable == 3);
        for (uint32_t i = 2; i < 5; ++i) CHECK_FALSE(tier.holds(path.hashes[i]));
        CHECK(testing::load_pages(tier, pool, whole, 0, 3) == 3);
        tier.verify(testing::no_trie_pages);
        continue;
      }
    }
    DiskTier restarted(config_for(dir, 64));
    CHECK(restarted.stats().recovered_pages == 3);
    CHECK(restarted.stats().unreachable == 3);
    CHECK(restarted.holds(whole.hashes[2]));
    CHECK_FALSE(restarted.holds(path.hashes[2]));
  }
}

TEST_CASE("disk tier: bad configurations are refused with the reason") {
  const std::string dir = testing::disk_dir("config");
  DiskTierConfig small = config_for(dir, 1);
  small.capacity_bytes -= 1;
  CHECK_THROWS_WITH_AS(DiskTier{small}, doctest::Contains("holds no page"), std::invalid_argument);
  DiskTierConfig queue = config_for(dir, 4);
  queue.queue_pages = 0;
  CHECK_THROWS_WITH_AS(DiskTier{queue}, doctest::Contains("a queue of 0 pages"),
                       std::invalid_argument);
  DiskTierConfig policy = config_for(dir, 4);
  policy.policy = "nope";
  CHECK_THROWS_WITH_AS(DiskTier{policy}, doctest::Contains("nope"), std::invalid_argument);
  DiskTierConfig write = config_for(dir, 4, "write_around");
  CHECK_THROWS_WITH_AS(DiskTier{write}, doctest::Contains("write_around"), std::invalid_argument);
  DiskTierConfig path = config_for("/proc/radixkv-no-such-dir", 4);
  CHECK_THROWS_WITH_AS(DiskTier{path}, doctest::Contains("/proc/radixkv-no-such-dir"),
                       std::system_error);
  // A pool whose pages are not the tier's size.
  DiskTier tier(config_for(dir, 4));
  PagePool other(KvLayout{1, 1, 8, 2, P}, 4, make_host_backend());
  CHECK_THROWS_WITH_AS(tier.attach_pools(&other, nullptr), doctest::Contains("128-byte pages"),
                       std::invalid_argument);
}

// A runtime over a host-memory pool with the disk tier as its tier below (TierConfig::remote).
struct DiskRuntime {
  DiskRuntime(DiskTier& tier, uint32_t pages, bool host_tier = false)
      : pool(kLayout, pages, make_host_backend()),
        host(kLayout, pages / 2, make_host_backend()),
        runtime(pool, {0, 1.0, 1.0}, tiers(tier, host_tier)) {}
  TierConfig tiers(DiskTier& tier, bool host_tier) {
    TierConfig c;
    c.remote = &tier;
    if (host_tier) {
      c.host.pool = &host;
      c.host.copier = &copier;
    }
    return c;
  }
  // Admits, waits for its load, computes (fills) the rest, finishes.
  AdmitResult run(const std::vector<TokenId>& prompt) {
    const AdmitResult r = runtime.admit({0, 0, prompt});
    REQUIRE(r.ok());
    runtime.wait_load(r.load_ticket);
    std::vector<PageHash> hashes;
    chain_page_hashes(0, prompt, P, 0, prompt.size() / P, hashes);
    for (uint32_t i = r.reused_tokens / P; i < hashes.size(); ++i) {
      testing::fill_page(hashes[i], pool.host_bytes(r.block_table[i]));
    }
    for (uint32_t i = 0; i < r.reused_tokens / P; ++i) {
      CHECK(testing::holds_page(pool.host_bytes(r.block_table[i]), hashes[i]));
    }
    runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
    runtime.finish(r.seq);
    runtime.check_accounting();
    return r;
  }

  PagePool pool;
  PagePool host;
  testing::TestCopier copier;
  PrefixCacheRuntime runtime;
};

std::vector<std::vector<TokenId>> prompts() {
  std::vector<std::vector<TokenId>> out;
  for (int c = 0; c < 4; ++c) {
    std::vector<TokenId> prompt = testing::iota_tokens(3 * P, 100);  // a shared prefix
    for (int turn = 0; turn < 3; ++turn) {
      const std::vector<TokenId> more = testing::iota_tokens(2 * P + 1, 1000 * (c + 1) + 50 * turn);
      prompt.insert(prompt.end(), more.begin(), more.end());
      out.push_back(prompt);
    }
  }
  return out;
}

TEST_CASE("disk tier under another (LowerTiers): the lower tier serves the rest of the run") {
  // Two disk tiers, the upper holding the first pages of a path, the lower all of them: each checks
  // a page's parent and tokens, so the lower one loads the rest only when asked under the right
  // parent, with the rest's tokens.
  PagePool pool(kLayout, 32, make_host_backend());
  DiskTier upper(config_for(testing::disk_dir("upper"), 16));
  DiskTier lower(config_for(testing::disk_dir("lower"), 16));
  upper.attach_pools(&pool, nullptr);
  lower.attach_pools(&pool, nullptr);
  const PagePath path = PagePath::counting(0, 10, P);
  testing::feed_pages(upper, pool, path, 0, 4);
  testing::feed_pages(lower, pool, path, 0, 10);
  LowerTiers tiers({&upper, &lower});
  for (const uint32_t first : {0u, 2u}) {
    CAPTURE(first);
    const uint32_t count = 10 - first;
    std::vector<PageId> pages;
    REQUIRE(pool.allocate(count, pages));
    CHECK(tiers.load(path.parent(first), std::span(path.hashes).subspan(first),
                     path.tokens_from(first), pool, pages) == count);
    CHECK(tiers.last_load() == std::vector<uint32_t>{4 - first, 6});
    for (uint32_t i = 0; i < count; ++i) {
      CHECK(testing::holds_page(pool.host_bytes(pages[i]), path.hashes[first + i]));
    }
    pool.release(pages);
  }
  CHECK(upper.stats().bad_pages + lower.stats().bad_pages == 0);
}

TEST_CASE(
    "disk tier under a runtime: write_back writes what the local tiers give up, "
    "write_through every computed page, and a new runtime (or process) hits them") {
  for (const char* write : {"write_back", "write_through"}) {
    CAPTURE(write);
    const std::string dir = testing::disk_dir("runtime");
    {
      DiskTier tier(config_for(dir, 256, write));
      {
        DiskRuntime r(tier, 256);
        for (const auto& prompt : prompts()) r.run(prompt);
        const uint64_t cached = r.runtime.cached_pages();
        tier.drain();
        // Nothing has left the trie: write-back has written nothing, write-through every page.
        CHECK(tier.stats().written_pages == (std::string(write) == "write_back" ? 0 : cached));
        r.runtime.evict(cached);
        tier.drain();
        CHECK(tier.stats().written_pages == cached);
      }
      // A new runtime over the same tier: the prompts' pages come from disk, bytes and all.
      DiskRuntime r(tier, 256);
      const AdmitResult first = r.run(prompts().back());
      CHECK(first.remote_hit_tokens == r.runtime.reuse_cut(prompts().back().size()));
      CHECK(tier.stats().loaded_pages * P == first.remote_hit_tokens);
    }
    // And a new process: the same, from the files.
    DiskTier tier(config_for(dir, 256, write));
    DiskRuntime r(tier, 256);
    CHECK(r.run(prompts().front()).remote_hit_tokens == r.runtime.reuse_cut(prompts()[0].size()));
    CHECK(tier.stats().bad_pages == 0);
  }
}

TEST_CASE(
    "disk tier under a runtime with a host tier: pages the host gives up go to disk, and come "
    "back through staging pages under the load ticket") {
  for (const std::string write : {"write_back", "write_through"}) {
    CAPTURE(write);
    DiskTier tier(config_for(testing::disk_dir("staged"), 256, write));
    {
      DiskRuntime r(tier, 16, /*host_tier=*/true);
      for (const auto& prompt : prompts()) r.run(prompt);
      tier.drain();
      const uint64_t host_evicted = r.runtime.tree().stats().host_evicted_pages;
      CHECK(host_evicted > 0);
      if (write == "write_back") {
        CHECK(tier.stats().written_pages + tier.stats().known_pages == host_evicted);
      }
      // The first conversation's own pages left both local tiers; its prefix did not.
      const AdmitResult again = r.run(prompts().front());  // run() checks the bytes
      CHECK(again.remote_hit_tokens == 2 * P);
      CHECK(again.load_ticket != 0);
    }
    if (write == "write_back") continue;
    // Written through, the shared prefix is on disk too: a new runtime hits all of it at once.
    // (Under write-back it was still in the local tiers when the runtime went, and the pages below
    // it on disk went with it: the prefix rule.)
    DiskRuntime r(tier, 16, /*host_tier=*/true);
    const AdmitResult first = r.run(prompts().front());
    CHECK(first.remote_hit_tokens == r.runtime.reuse_cut(prompts()[0].size()));
    CHECK(first.load_ticket != 0);
    tier.verify(testing::no_trie_pages);
  }
}

TEST_CASE(
    "disk tier metrics: a page written to disk and loaded back counts once each, since the "
    "runtime's start") {
  DiskTier tier(config_for(testing::disk_dir("metrics"), 16));
  const std::vector<TokenId> prompt = testing::iota_tokens(3 * P + 1, 100);  // 3 whole pages
  // The exposition's sample of `family` for the disk tier, as written.
  const auto disk_sample = [](const PrefixCacheRuntime& runtime, const std::string& family) {
    std::ostringstream out;
    runtime.write_metrics(out);
    const std::string text = out.str();
    const std::string head = family + "{tier=\"disk\"} ";
    const std::size_t at = text.find(head);
    REQUIRE_MESSAGE(at != std::string::npos, family << " has no disk sample:\n" << text);
    return std::stod(text.substr(at + head.size(), text.find('\n', at) - at - head.size()));
  };
  for (int life = 0; life < 2; ++life) {
    CAPTURE(life);
    DiskRuntime r(tier, 256);
    if (life == 0) {
      CHECK(r.run(prompt).remote_hit_tokens == 0);
      r.runtime.evict(3);  // write-back: the 3 pages are queued for the drive
      tier.drain();        // and written
    }
    const AdmitResult again = r.run(prompt);
    CHECK(again.remote_hit_tokens == 3 * P);
    r.runtime.evict(3);  // on disk already: not written again
    tier.drain();
    const RuntimeMetrics m = r.runtime.metrics();
    REQUIRE(m.lower.size() == 1);
    CHECK(m.lower[0].tier == "disk");
    CHECK(disk_sample(r.runtime, "radixkv_pages_written_total") == (life == 0 ? 3 : 0));
    CHECK(disk_sample(r.runtime, "radixkv_tier_written_bytes_total") ==
          (life == 0 ? 3 * kSlot : 0));
    CHECK(disk_sample(r.runtime, "radixkv_pages_loaded_total") == 3);
    CHECK(disk_sample(r.runtime, "radixkv_hit_tokens_total") == 3 * P);
    CHECK(disk_sample(r.runtime, "radixkv_tier_read_bytes_total") == 3 * kSlot);
    CHECK(disk_sample(r.runtime, "radixkv_pages_evicted_total") == 0);
    CHECK(disk_sample(r.runtime, "radixkv_cached_bytes") == 3 * kSlot);
    CHECK(disk_sample(r.runtime, "radixkv_pool_capacity_bytes") == tier.config().capacity_bytes);
    CHECK(m.remote_only_loaded_pages() == 0);  // every tier-below hit was the disk's
  }
}

}  // namespace
}  // namespace radixkv
