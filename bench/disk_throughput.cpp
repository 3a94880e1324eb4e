// radixkv_disk_bench: the disk tier's write and read throughput against the same drive's raw
// O_DIRECT throughput, measured in one run, interleaved round by round (bench/README.md, "The disk
// tier").
//
//   raw write   io_uring, O_DIRECT, `queue` slot-sized writes in flight, every slot of a
//               preallocated file in slot order;
//   tier write  DiskTier::dropping() of as many new pages from a host pool (each copied into an
//               aligned buffer with its header and checksums, queued, submitted in batches),
//               drained at the end: new pages evict the last round's;
//   raw read    the same slots read back, `queue` in flight;
//   tier read   DiskTier::load() of every page, one path of `queue` pages per call (each slot
//               read, both checksums and the chain hash checked, the payload copied into a pool
//               page).
// Each round runs the four, the raw drive and the tier alternating which goes first. Throughput
// counts page (payload) bytes for the tier and slot bytes for the raw drive, so the
// ratio includes the slot header's block. Files go under --dir (default $TMPDIR or /tmp) and are
// removed at the end.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <vector>

#include "disk/disk_io.h"
#include "disk/disk_tier.h"
#include "kv_store/page_pool.h"
#include "radix/page_hash.h"

namespace {

using namespace radixkv;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string dir;
  uint64_t page_bytes = 2u << 20;
  uint32_t pages = 256;
  uint32_t queue = 32;
  uint32_t rounds = 5;
  std::string io = "io_uring";
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds (user and system) this process has used: on a machine whose cores are shared, the
// tier's throughput is bound by the CPU it gets, which the raw drive hardly needs.
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto s = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// A pass's wall and CPU seconds.
struct Timed {
  double wall = 0;
  double cpu = 0;
};
template <typename F>
Timed timed(F&& pass) {
  const double cpu = cpu_seconds();
  const double wall = pass();
  return {wall, cpu_seconds() - cpu};
}

// Raw O_DIRECT transfers of every slot of a preallocated file, `queue` in flight.
class RawDrive {
 public:
  RawDrive(const std::string& path, uint64_t slot_bytes, uint32_t slots, uint32_t queue)
      : slot_bytes_(slot_bytes), slots_(slots) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot open " + path + " with O_DIRECT");
    if (::fallocate(fd_, 0, 0, static_cast<off_t>(slot_bytes * slots)) != 0) {
      throw std::runtime_error("cannot preallocate " + path);
    }
    io_ = disk::make_uring_io(fd_, queue);
    for (uint32_t i = 0; i < queue; ++i) buffers_.emplace_back(slot_bytes);
    std::mt19937_64 rng(1);
    for (auto& b : buffers_) {
      for (std::byte& x : b.bytes()) x = static_cast<std::byte>(rng());
    }
  }
  ~RawDrive() {
    io_.reset();
    ::close(fd_);
  }
  // Seconds to move every slot once.
  double pass(bool write) {
    const auto start = Clock::now();
    std::vector<disk::IoCompletion> done;
    uint32_t next = 0;
    std::vector<uint32_t> free_buffers(buffers_.size());
    for (uint32_t i = 0; i < free_buffers.size(); ++i) free_buffers[i] = i;
    while (next < slots_ || io_->in_flight() > 0) {
      while (next < slots_ && !free_buffers.empty()) {
        const uint32_t b = free_buffers.back();
        free_buffers.pop_back();
        if (write) {
          io_->queue_write(buffers_[b].bytes(), uint64_t{next} * slot_bytes_, b);
        } else {
          io_->queue_read(buffers_[b].bytes(), uint64_t{next} * slot_bytes_, b);
        }
        ++next;
      }
      io_->submit();
      done.clear();
      io_->reap(1, done);
      for (const disk::IoCompletion& c : done) {
        if (c.result != static_cast<int64_t>(slot_bytes_))
          throw std::runtime_error("raw I/O failed");
        free_buffers.push_back(static_cast<uint32_t>(c.tag));
      }
    }
    return seconds_since(start);
  }

 private:
  int fd_ = -1;
  uint64_t slot_bytes_;
  uint32_t slots_;
  std::unique_ptr<disk::DiskIo> io_;
  std::vector<disk::AlignedBuffer> buffers_;
};

// The tier with paths of `queue` pages each, new ones every round.
class TierDrive {
 public:
  TierDrive(const std::string& dir, const KvLayout& layout, const Options& o)
      : layout_(layout),
        o_(o),
        tier_(std::make_unique<disk::DiskTier>(config(dir, layout, o))),
        pool_(layout, o.queue, make_host_backend()) {
    tier_->attach_pools(&pool_, nullptr);
    if (!pool_.allocate(o.queue, pages_)) throw std::runtime_error("pool");
    std::mt19937_64 rng(2);
    for (PageId p : pages_) {
      for (std::byte& x : pool_.host_bytes(p)) x = static_cast<std::byte>(rng());
    }
  }
  static disk::DiskTierConfig config(const std::string& dir, const KvLayout& layout,
                                     const Options& o) {
    const disk::SlotGeometry g{layout.page_tokens, layout.bytes_per_page()};
    disk::DiskTierConfig c{dir, layout, "bench",
                           disk::SlotFile::kManifestBytes + uint64_t{o.pages} * g.slot_bytes()};
    c.io = *disk::parse_io_mode(o.io);
    c.queue_pages = o.queue;
    return c;
  }
  // Seconds to write `pages` new pages (paths of `queue` pages), drained.
  double write() {
    ++round_;
    paths_.clear();
    const auto start = Clock::now();
    for (uint32_t first = 0; first < o_.pages; first += o_.queue) {
      std::vector<TokenId> tokens(size_t{o_.queue} * layout_.page_tokens);
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<TokenId>(round_ * 1000003 + first * 131 + i);
      }
      std::vector<PageHash> hashes;
      const PageHash seed = chain_page_hashes(0, tokens, layout_.page_tokens, 0, o_.queue, hashes);
      tier_->stored(Tier::kDevice, 0, std::nullopt, hashes, tokens);
      // As eviction gives them: tail first.
      for (uint32_t i = o_.queue; i-- > 0;) {
        tier_->dropping({Tier::kDevice, hashes[i], i == 0 ? seed : hashes[i - 1],
                         std::span<const TokenId>(tokens).subspan(size_t{i} * layout_.page_tokens,
                                                                  layout_.page_tokens),
                         pages_[i]});
      }
      tier_->flush();
      paths_.push_back({std::move(tokens), std::move(hashes), seed});
    }
    tier_->drain();
    return seconds_since(start);
  }
  // Seconds to load every page written by the last write().
  double read() {
    const auto start = Clock::now();
    for (const Path& p : paths_) {
      if (tier_->load(p.seed, p.hashes, p.tokens, pool_, pages_) != p.hashes.size()) {
        throw std::runtime_error("tier read: a page was missing or bad");
      }
    }
    return seconds_since(start);
  }
  const disk::DiskTier& tier() const { return *tier_; }
  // A restart: the tier closed and opened again on its path (the index rebuilt from the slots).
  void restart() {
    const disk::DiskTierConfig c = tier_->config();
    tier_.reset();
    tier_ = std::make_unique<disk::DiskTier>(c);
    tier_->attach_pools(&pool_, nullptr);
  }

 private:
  struct Path {
    std::vector<TokenId> tokens;
    std::vector<PageHash> hashes;
    PageHash seed;
  };
  KvLayout layout_;
  Options o_;
  std::unique_ptr<disk::DiskTier> tier_;
  PagePool pool_;
  std::vector<PageId> pages_;
  std::vector<Path> paths_;
  uint64_t round_ = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* tmp = std::getenv("TMPDIR");
  o.dir = tmp != nullptr ? tmp : "/tmp";
  CLI::App app("radixkv_disk_bench: the disk tier's throughput against raw O_DIRECT");
  app.add_option("--dir", o.dir, "where the files go (removed at the end)");
  app.add_option("--page-bytes", o.page_bytes, "bytes of one page (a multiple of 64)");
  app.add_option("--pages", o.pages, "pages each pass moves (a multiple of --queue)");
  app.add_option("--queue", o.queue, "transfers in flight; pages per load");
  app.add_option("--rounds", o.rounds, "interleaved rounds (medians are reported)");
  app.add_option("--io", o.io, "the tier's engine: io_uring or sync");
  CLI11_PARSE(app, argc, argv);
  if (o.pages % o.queue != 0 || o.page_bytes % 64 != 0 || !disk::parse_io_mode(o.io)) {
    fmt::print(stderr,
               "radixkv_disk_bench: --pages must be a multiple of --queue, --page-bytes of "
               "64, --io io_uring or sync\n");
    return 2;
  }
  const std::filesystem::path root =
      std::filesystem::path(o.dir) / fmt::format("radixkv_disk_bench_{}", ::getpid());
  std::filesystem::create_directories(root);
  int status = 0;
  try {
    // 16 tokens a page, the rest in head_dim: only bytes_per_page matters here.
    const KvLayout layout{1, 1, static_cast<uint32_t>(o.page_bytes / 64), 2, 16};
    const disk::SlotGeometry g{16, layout.bytes_per_page()};
    RawDrive raw((root / "raw.dat").string(), g.slot_bytes(), o.pages, o.queue);
    TierDrive tier((root / "tier").string(), layout, o);
    // One pass each first: every extent written (ext4 preallocates unwritten extents, whose first
    // write costs a conversion), the tier's buffers allocated.
    raw.pass(true);
    tier.write();
    std::vector<Timed> rw, tw, rr, tr;
    for (uint32_t r = 0; r < o.rounds; ++r) {
      // Which goes first alternates, so that neither always reads right after its own writes.
      if (r % 2 == 0) {
        rw.push_back(timed([&] { return raw.pass(true); }));
        tw.push_back(timed([&] { return tier.write(); }));
        rr.push_back(timed([&] { return raw.pass(false); }));
        tr.push_back(timed([&] { return tier.read(); }));
      } else {
        tw.push_back(timed([&] { return tier.write(); }));
        rw.push_back(timed([&] { return raw.pass(true); }));
        tr.push_back(timed([&] { return tier.read(); }));
        rr.push_back(timed([&] { return raw.pass(false); }));
      }
    }
    const double raw_bytes = double(g.slot_bytes()) * o.pages;
    const double page_bytes = double(o.page_bytes) * o.pages;
    const auto wall = [](const std::vector<Timed>& v) {
      std::vector<double> x;
      for (const Timed& t : v) x.push_back(t.wall);
      return median(x);
    };
    const auto cpu = [](const std::vector<Timed>& v) {
      std::vector<double> x;
      for (const Timed& t : v) x.push_back(t.cpu);
      return median(x);
    };
    const auto gbps = [](double bytes, double s) { return bytes / s / 1e9; };
    fmt::print("disk tier: {}\n", tier.tier().describe());
    fmt::print("{} pages of {} bytes (slots of {}), {} in flight, {} rounds, medians\n", o.pages,
               o.page_bytes, g.slot_bytes(), o.queue, o.rounds);
    fmt::print(
        "| | raw O_DIRECT GB/s | tier GB/s | tier / raw | raw CPU ms/GB | tier CPU ms/GB |\n");
    fmt::print("|---|---|---|---|---|---|\n");
    const auto row = [&](const char* what, const std::vector<Timed>& r,
                         const std::vector<Timed>& t) {
      const double raw_gbps = gbps(raw_bytes, wall(r)), tier_gbps = gbps(page_bytes, wall(t));
      fmt::print("| {} | {:.3f} | {:.3f} | {:.1f} % | {:.0f} | {:.0f} |\n", what, raw_gbps,
                 tier_gbps, 100 * tier_gbps / raw_gbps, 1e3 * cpu(r) / (raw_bytes / 1e9),
                 1e3 * cpu(t) / (page_bytes / 1e9));
    };
    row("write", rw, tw);
    row("read", rr, tr);
    const disk::DiskTierStats s = tier.tier().stats();
    fmt::print("tier: {} written, {} loaded, {} bad, {} write waits\n", s.written_pages,
               s.loaded_pages, s.bad_pages, s.write_waits);
    tier.restart();
    const disk::DiskTierStats after = tier.tier().stats();
    fmt::print("restart: {} pages recovered from {} slots in {:.1f} ms\n", after.recovered_pages,
               after.slots, after.recovery_ns / 1e6);
    const double read_after = tier.read();
    fmt::print("first read after the restart: {:.3f} GB/s\n", page_bytes / read_after / 1e9);
  } catch (const std::exception& e) {
    fmt::print(stderr, "radixkv_disk_bench: {}\n", e.what());
    status = 1;
  }
  std::filesystem::remove_all(root);
  return status;
}
