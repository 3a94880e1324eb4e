// RemoteTier: the shared tier under the local ones (device, host), on a RemoteStore (Redis).
//
// Writing. A page leaving the trie from the lowest local tier (TierEvents::dropping) is encoded
// at once, synchronously, while its bytes are still in the pool (remote/page_value.h: header,
// tokens, the page's bytes, or `filler_bytes` of filler for a pool without bytes), and queued. A
// writer thread sends the queue to the store in batches (one pipeline each). The queue is bounded
// (`queue_pages`): a page that finds it full is dropped and counted, so the scheduler's thread
// never waits for the store.
//
// With `write_through`, a page is also encoded and queued when it is cached: the tree's
// inserted() event, for a computed page new to the trie (pages loaded from the store are known
// already). Other servers can then load it at once, at the price of a write per computed page;
// write-back writes only what the local tiers give up.
//
// Pages the store is known to hold (written or loaded by this tier, up to `known_pages` of them,
// the oldest forgotten first) are not written again: a page that goes back and forth between the
// cache and the store costs one write, not one per eviction. After any store failure the tier
// forgets them all (a restarted server is empty). A server that evicts keys itself (maxmemory)
// may hold fewer than the tier believes: such a page is a miss until it is dropped again after
// being forgotten, never wrong bytes.
//
// Reading. load() names the pages that follow a request's local match by their chain hashes,
// asks the store for all of them in one round trip (bounded by the store's timeout), and takes
// the leading run whose values check out against what the request expects (layout, parent,
// tokens, payload size and checksum): their payloads are copied into the caller's device pages.
// A value that does not check out ends the run and is counted (bad_values): wrong KV is never
// served. A store that fails (down, slow, restarted) makes load() return 0 at once, counted in
// errors; while the store waits out its backoff, loads and writes are skipped (unavailable),
// without touching the network. Nothing here throws for a store failure; stats() says how many
// calls failed, how many were skipped, and the first failure's message (a wrong password shows as
// the server's WRONGPASS), so that a caller can tell a tier that never worked from one that rode
// out an outage.
//
// Prefetch (`prefetch` not kOff; SGLang HiCache's L3 prefetch policies, `--hicache-storage-
// prefetch-policy` best_effort / timeout, are the model). prefetch(), called when a request is
// queued, hands the lookup of the pages after its local match to a reader thread with a store of
// its own (remote/prefetcher.h). load() first takes what the prefetch fetched, checking every
// value as above, then:
//   kBestEffort  never waits: a page not fetched yet ends the run (admit never touches the
//                network; a prefetch that is too late is a miss).
//   kTimeout     waits for pages still in flight until `prefetch_wait` after load() began (a page
//                still in flight then ends the run), and looks up synchronously, as without
//                prefetch, the pages no prefetch asked for (dropped, forgotten, or never asked).
// load_wait_ns counts load()'s waiting for the prefetch too.
//
// It is one of the tree's tier observers (radix/tier_events.h): of the events it reads only
// dropping() and inserted(). Threads: load() and the TierEvents calls come from the
// tree's owner; the writer thread only touches the queue and its own store.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kv_store/kv_layout.h"
#include "kv_store/page_pool.h"
#include "remote/prefetcher.h"
#include "remote/remote_store.h"
#include "runtime/remote_pages.h"

namespace radixkv::remote {

enum class PrefetchPolicy : uint8_t { kOff, kBestEffort, kTimeout };
// "off", "best_effort", "timeout"; nullopt for another name.
std::optional<PrefetchPolicy> parse_prefetch_policy(std::string_view name);
std::string_view to_string(PrefetchPolicy policy);

struct RemoteTierConfig {
  std::string prefix = "radixkv";      // the deployment prefix of every key
  KvLayout layout;                     // with `model`, the layout id in every key and value
  std::string model;                   // the model's name: models of one KV shape never share pages
  std::size_t filler_bytes = 0;        // payload of a value from a pool without bytes (replay)
  std::size_t queue_pages = 4096;      // pages waiting for the writer at most
  std::size_t batch_pages = 64;        // pages per write pipeline at most
  std::size_t known_pages = 1u << 20;  // pages remembered as held by the store (0: none)
  bool write_through = false;          // also write each page when it is cached (above)
  PrefetchPolicy prefetch = PrefetchPolicy::kOff;  // (above)
  std::chrono::milliseconds prefetch_wait{50};     // kTimeout: longest wait for a prefetch
  std::size_t prefetch_queue = 256;                // lookups waiting for the reader thread at most
  std::size_t prefetch_pages = 1u << 16;           // fetched pages kept for load() at most
  std::size_t prefetch_bytes = std::size_t{256} << 20;  // and their values' bytes at most
};

struct RemoteTierStats {
  uint64_t lookups = 0;  // load() calls that asked the store
  uint64_t looked_up_pages = 0;
  uint64_t loaded_pages = 0;    // pages load() returned
  uint64_t bad_values = 0;      // values that did not check out (each ended a run)
  uint64_t queued_pages = 0;    // pages handed to the writer
  uint64_t known_skipped = 0;   // pages not written again: the store holds them already
  uint64_t stored_pages = 0;    // pages the store took
  uint64_t dropped_writes = 0;  // pages not written: queue full, store failed or refused, on a GPU
  uint64_t errors = 0;          // store calls that failed (read or write), refused items
  uint64_t unavailable = 0;     // calls skipped while the store waited out its backoff
  uint64_t load_wait_ns = 0;    // time load() spent waiting for the store: the caller stalled
  PrefetcherStats prefetch;     // with prefetch on
  uint64_t answered = 0;        // store calls that completed, whole or in part (loads, writes)
  // The first failure's message: of the tier's own calls, else of its prefetches ("": none).
  std::string first_error;

  // Store calls failed or were skipped, and none completed: the tier never worked (a wrong
  // password, no server there), as opposed to one that rode out an outage.
  bool never_answered() const {
    return errors + unavailable + prefetch.errors + prefetch.unavailable > 0 &&
           answered + prefetch.answered == 0;
  }
};

class RemoteTier final : public RemotePages {
 public:
  // `reader` serves load(), `writer` the writer thread, `prefetcher` the prefetch thread (needed
  // when config.prefetch is on): one connection per thread. Throws std::invalid_argument for a
  // queue or batch of 0 pages, or prefetch on without its store.
  RemoteTier(std::unique_ptr<RemoteStore> reader, std::unique_ptr<RemoteStore> writer,
             RemoteTierConfig config, std::unique_ptr<RemoteStore> prefetcher = nullptr);
  // Writes what is still queued (each batch bounded by the store's timeout), then stops.
  ~RemoteTier() override;
  RemoteTier(const RemoteTier&) = delete;
  RemoteTier& operator=(const RemoteTier&) = delete;

  // The pools dropping() reads bytes from (nullptr: no such tier). Refused (std::invalid_argument):
  // a host pool whose pages are on a GPU, and write-through over a device pool on a GPU (its pages
  // cannot be read when cached). A device page on a GPU that leaves the trie directly (not
  // through the host tier) is not written: counted in dropped_writes. Loads into a device pool on
  // a GPU go through host pages (the runtime stages them: runtime/remote_staging.h).
  // Bytes are read only after `arrivals` (if any) says they are there.
  void attach_pools(PagePool* device, PagePool* host, PageArrivals* arrivals = nullptr) override;

  // The leading run of pages named by `hashes` (page i's parent is hashes[i-1], the first's
  // `parent`; its tokens tokens[i*P, (i+1)*P)) that the store holds and that check out, copied
  // into `pages` of `pool` when the pool has bytes. Returns how many.
  uint32_t load(const PageHash& parent, std::span<const PageHash> hashes,
                std::span<const TokenId> tokens, PagePool& pool,
                std::span<const PageId> pages) override;

  // Starts looking up the pages named by `hashes` (above); does nothing with prefetch off.
  void prefetch(std::span<const PageHash> hashes) override;

  // Blocks until every page queued so far has been sent (or dropped), and every prefetch queued
  // has been looked up. For tests and shutdown.
  void drain() override;
  RemoteTierStats stats() const;
  // Its counters as the runtime exports them (tier "remote"): pages only, no bytes and no capacity
  // (the store decides what it keeps).
  void add_metrics(std::vector<LowerTierMetrics>& out) const override;
  std::string describe() const { return where_; }
  const RemoteTierConfig& config() const { return config_; }

  // TierEvents: what leaves the lowest local tier, and (writing through) what is cached.
  void stored(Tier, Namespace, std::optional<PageHash>, std::span<const PageHash>,
              std::span<const TokenId>) override {}
  void removed(Tier, std::span<const PageHash>) override {}
  void cleared() override {}
  void dropping(const TreePage& page) override;
  void inserted(const TreePage& page) override;

 private:
  using Item = std::pair<std::string, std::string>;  // key, value
  void write(const TreePage& page);
  void write_loop();
  void remember(const PageHash& hash);
  bool known(const PageHash& hash);
  std::span<const std::byte> bytes_of(Tier tier, PageId page);
  std::vector<std::string> keys_of(std::span<const PageHash> hashes) const;
  // Counts a failed store call (errors) and keeps its message if it is the first. Either thread.
  void count_error(std::string_view message, std::string_view detail = {}) noexcept;

  std::unique_ptr<RemoteStore> reader_;
  std::unique_ptr<RemoteStore> writer_store_;
  RemoteTierConfig config_;
  uint64_t layout_id_;
  std::string where_;
  PagePool* device_ = nullptr;
  PagePool* host_ = nullptr;
  PageArrivals* arrivals_ = nullptr;

  std::unique_ptr<Prefetcher> prefetcher_;  // with prefetch on
  // Owner's thread only: the pages the store holds, and their order for forgetting.
  std::unordered_set<PageHash, PageHashKey> known_;
  std::deque<PageHash> known_order_;
  std::atomic<bool> forget_{false};  // the writer saw a failure: forget every known page

  // Counters the owner's thread writes (read by stats()).
  std::atomic<uint64_t> lookups_{0}, looked_up_pages_{0}, loaded_pages_{0}, bad_values_{0},
      queued_pages_{0}, known_skipped_{0}, load_wait_ns_{0};
  // Counters both threads write.
  std::atomic<uint64_t> stored_pages_{0}, dropped_writes_{0}, errors_{0}, unavailable_{0},
      answered_{0};
  mutable std::mutex error_mutex_;
  std::string first_error_;  // under error_mutex_

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Item> queue_;
  bool writing_ = false;  // the writer holds a batch
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace radixkv::remote
