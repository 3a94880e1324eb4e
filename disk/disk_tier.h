// DiskTier: a tier on a local drive under the host tier, that survives restarts (docs/tiers.md,
// "The disk tier"). Like the remote tier it is not in the trie: pages are named by their chain
// hash (radix/page_hash.h), looked up after the local match, and brought to the device through
// the host tier's staging pages and copier under the runtime's load tickets (the runtime does that:
// runtime/remote_staging.h).
//
// Storage. Fixed-size slots (disk/slot_format.h: header, tokens, payload, two checksums) in one
// preallocated file under `path` (disk/slot_file.h), as many as `capacity_bytes` holds with the
// manifest: the tier never has more on disk. Reads and writes go through io_uring with O_DIRECT
// and batched submissions (disk/disk_io.h), or pread/pwrite where io_uring is unavailable.
//
// Writing (the host tier's write policies, radix/tier_config.h):
//   write_back     a page is written when it leaves the trie from the lowest local tier
//                  (TierEvents::dropping), while its bytes are still in the pool;
//   write_through  also when it is cached (TierEvents::inserted, a computed page new to the trie);
//   write_through_selective[:hits=N]  when it leaves the trie, if it entered the device N times
//                  (cached, then loaded back from a tier below it, N - 1 times): the events a tier
//                  below the trie sees carry no hits of pages that stay on the device.
// A page already on disk is not written again (a load keeps its copy: the disk tier is inclusive,
// so a page that goes back and forth costs one write, and a crash loses nothing it had). The
// bytes are copied into an aligned buffer at once and the write queued; writes are submitted in
// one batch at the end of each runtime call (flush) or when `queue_pages` are waiting, and reaped
// as they complete; a write that finds every buffer busy waits for the oldest.
//
// Reading. load() takes the leading run of the named pages that the index holds, reads their slots
// in batches of `queue_pages`, and checks each whole slot (layout, geometry, both checksums, the
// chain hash, the parent it must follow, the tokens the request expects) before its payload is
// copied into the caller's page. A slot that does not check out is a miss, counted in bad_pages,
// never served: it ends the run and leaves the index (with the pages below it, now unreachable).
//
// The prefix rule (disk/disk_index.h): the tier keeps only pages a lookup can reach. A page whose
// parent left the trie without being written (selective, no room) is not written, and pages below
// it on disk go; eviction takes disk leaves only; when the trie goes as a whole (cleared(), a new
// runtime attaching, a restart) every page whose chain does not reach a first page on disk goes.
//
// Restart. The constructor opens (or creates) the path and rebuilds the index from a scan of every
// slot's head (header and tokens; payloads are checked when loaded), keeping the newest copy of
// each page and the reachable ones: hits are served from the first request. A path holding another
// layout or model is refused. Slots are never erased: an evicted page's old slot still holds a
// whole, correct page, which recovery may find again (its bytes are right; it counts against the
// same fixed slots).
//
// Durability: a write is on the drive when it completes (O_DIRECT; the page cache otherwise), so a
// killed process loses only writes in flight, and a torn slot fails its checksums. The tier does
// not fsync: after a power loss, writes the drive had not made durable are lost or torn, and the
// checksums catch the torn ones the same way.
//
// Failures never reach the caller as exceptions from load() or the events: an I/O error is a miss
// or a skipped write, counted; an io_uring that fails as a whole stops the tier (every later call
// a miss or a skipped write, describe() says why). Not thread-safe: the tree's owner calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "disk/disk_index.h"
#include "disk/disk_io.h"
#include "disk/slot_file.h"
#include "kv_store/kv_layout.h"
#include "radix/tier_config.h"
#include "runtime/remote_pages.h"

namespace radixkv::disk {

enum class IoMode : uint8_t { kAuto, kUring, kSync };
// "auto", "io_uring", "sync"; nullopt for another name.
std::optional<IoMode> parse_io_mode(std::string_view name);
std::string_view to_string(IoMode mode);

struct DiskTierConfig {
  std::string path;             // a directory, created when missing
  KvLayout layout;              // with `model`, the layout id every slot and the manifest carry
  std::string model;            // models of one KV shape never share pages
  uint64_t capacity_bytes = 0;  // manifest and slots together, never more
  // Bytes a slot stores of each page; nullopt: the layout's page bytes. A pool without bytes (the
  // replay) writes this many zero bytes.
  std::optional<uint64_t> payload_bytes = std::nullopt;
  // Bytes the budget counts for each slot; 0: its size. A replay, which stores no KV (a few bytes
  // of filler), counts what a slot of the layout's real pages takes, so that a capacity holds as
  // many pages as it would on a real drive (and the files stay far below it).
  uint64_t charged_slot_bytes = 0;
  std::string policy = "lru";               // any make_policy() spec
  std::string write_policy = "write_back";  // WritePolicy::parse()
  IoMode io = IoMode::kAuto;                // io_uring, else pread/pwrite
  bool direct = true;                       // O_DIRECT where the filesystem takes it
  uint32_t queue_pages = 32;                // writes waiting or in flight at most; reads per batch
};

struct DiskTierStats {
  uint64_t lookups = 0;          // load() calls that found at least one page in the index
  uint64_t loaded_pages = 0;     // pages load() returned
  uint64_t bad_pages = 0;        // slots that did not check out: at load, or torn at recovery
  uint64_t read_errors = 0;      // reads that failed (each ended a run)
  uint64_t queued_pages = 0;     // writes queued (each completes as written or as an error)
  uint64_t written_pages = 0;    // writes completed
  uint64_t write_errors = 0;     // writes that failed (the page left the index)
  uint64_t known_pages = 0;      // pages not written: on disk already
  uint64_t skipped_writes = 0;   // not written: the policy, no room, on a GPU, unreachable
  uint64_t evictions = 0;        // pages the policy evicted to make room
  uint64_t unreachable = 0;      // pages reclaimed by the prefix rule (recovery's included)
  uint64_t write_waits = 0;      // writes that waited for a buffer
  uint64_t read_bytes = 0;       // slot bytes read by load()
  uint64_t written_bytes = 0;    // slot bytes written
  uint64_t load_wait_ns = 0;     // time load() spent reading
  uint64_t recovered_pages = 0;  // pages the restart's scan indexed
  uint64_t recovery_ns = 0;      // the restart's scan and index, in nanoseconds
  uint64_t stored_pages = 0;     // pages indexed now
  uint64_t slots = 0;
};

class DiskTier final : public RemotePages {
 public:
  // Opens or creates the path and recovers what it holds. Throws std::invalid_argument for a bad
  // configuration (capacity below one slot, a bad policy or write policy, a queue of 0 pages) or
  // a path holding another layout, std::system_error naming the path for what the system refuses,
  // and IoUringUnavailable for IoMode::kUring where io_uring cannot be set up.
  explicit DiskTier(DiskTierConfig config);
  // Waits for every write queued (their pages are then on the drive), then closes.
  ~DiskTier() override;
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  // Pools whose pages the events name (nullptr: no such tier). Refused (std::invalid_argument):
  // a host pool on a GPU, write-through over a device pool on a GPU (the pages cannot be read when
  // cached), a pool with bytes whose pages are not payload_bytes. A device page on a GPU that
  // leaves the trie directly is not written (skipped). A new runtime means a new trie: pages that
  // were reachable only through the old one go (the prefix rule).
  void attach_pools(PagePool* device, PagePool* host, PageArrivals* arrivals = nullptr) override;

  uint32_t load(const PageHash& parent, std::span<const PageHash> hashes,
                std::span<const TokenId> tokens, PagePool& pool,
                std::span<const PageId> pages) override;

  // Submits every queued write and waits until all are done.
  void drain() override;
  DiskTierStats stats() const;
  // Its counters as the runtime exports them (tier "disk"): slots' bytes as the budget charges
  // them (DiskTierConfig::charged_slot_bytes).
  void add_metrics(std::vector<LowerTierMetrics>& out) const override;
  // The path, the I/O engine and whether O_DIRECT is on (and why not).
  std::string describe() const;
  const DiskTierConfig& config() const { return config_; }
  const SlotGeometry& geometry() const { return geometry_; }
  uint64_t layout_id() const { return layout_id_; }
  bool holds(const PageHash& hash) const { return index_.find(hash) != kNoSlot; }
  // The index's invariants (disk/disk_index.h), `in_trie` saying which pages the trie holds.
  void verify(const std::function<bool(const PageHash&)>& in_trie) const { index_.verify(in_trie); }

  // TierEvents
  void stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
              std::span<const PageHash> hashes, std::span<const TokenId> tokens) override;
  void removed(Tier, std::span<const PageHash>) override {}  // dropping() says it all
  void cleared() override;
  void flush() override;
  void dropping(const TreePage& page) override;
  void inserted(const TreePage& page) override;

 private:
  struct ReadSlot {
    SlotId slot = kNoSlot;
    int64_t result = 0;
    bool done = false;
  };

  void recover();
  void scan_heads(std::vector<AlignedBuffer>& heads, std::vector<DiskIndex::Found>& found,
                  uint64_t& bad);
  bool write(const TreePage& page);
  std::span<const std::byte> bytes_of(Tier tier, PageId page);
  uint32_t acquire_buffer();
  void complete(const IoCompletion& c);
  void reap(std::size_t at_least);
  void fail(const std::exception& e);
  uint32_t load_run(const PageHash& parent, std::span<const PageHash> hashes,
                    std::span<const TokenId> tokens, PagePool& pool, std::span<const PageId> pages,
                    uint32_t run);
  bool check_loaded(std::span<const std::byte> slot, const PageHash& hash, const PageHash& parent,
                    std::span<const TokenId> tokens);

  DiskTierConfig config_;
  WritePolicy write_policy_;
  uint64_t layout_id_;
  SlotGeometry geometry_;
  std::unique_ptr<SlotFile> file_;
  std::unique_ptr<DiskIo> io_;  // after file_: destroyed first, waiting for what is in flight
  std::string io_note_;         // why not io_uring or O_DIRECT, if so
  std::string failed_;          // why the tier stopped, if it did
  DiskIndex index_;

  PagePool* device_ = nullptr;
  PagePool* host_ = nullptr;
  PageArrivals* arrivals_ = nullptr;

  std::vector<AlignedBuffer> write_buffers_;
  std::vector<uint32_t> free_buffers_;
  std::unordered_map<SlotId, uint32_t> writing_;  // slot -> its write's buffer
  std::size_t unsubmitted_ = 0;
  std::vector<AlignedBuffer> read_buffers_;
  std::vector<ReadSlot> reads_;
  std::vector<IoCompletion> completions_;
  std::vector<TokenId> scratch_tokens_;

  std::unordered_map<Namespace, PageHash> seeds_;       // namespaces seen, their seeds
  std::unordered_set<PageHash, PageHashKey> seed_set_;  // the same seeds
  std::unordered_set<PageHash, PageHashKey> lost_;      // left the trie unwritten, this call
  std::unordered_map<PageHash, uint32_t, PageHashKey> entries_;  // selective: device entries
  uint64_t next_generation_ = 1;
  DiskTierStats stats_;
};

}  // namespace radixkv::disk
