// Prefetcher: the remote tier's reader thread, which looks pages up before admit asks for them
// (RemoteTier::prefetch, called when a request is queued), so that the scheduler does not wait
// for the network when it admits the request.
//
// A request() names the pages that follow a waiting request's local match (chain hashes and their
// keys). The pages already fetched or in flight are left out (a shared system prompt is looked up
// once), and the rest is queued for the thread unless `queue` lookups already wait: then it is
// dropped and counted (the scheduler never waits to hand one over). The thread sends each lookup
// to its own store (one round trip, bounded by the store's timeout) and keeps what came back, a
// value or "the store does not hold it", in a map keyed by chain hash, bounded by `pages` entries
// and `bytes` of values (the oldest forgotten first). A store failure keeps nothing and is
// counted; a partial one (a cluster master down) keeps the values it got and not the misses,
// which may be failures. Out of memory on the thread is a failure too, never the process's end.
//
// take() hands the leading run of a request's pages to load(), each entry once (taken out of the
// map). Values are not checked here: load() checks every value, fetched now or before, the same
// way. With a deadline, take() waits for pages still in flight until then (the policy `timeout`); a
// page still in flight at the deadline ends the run. Threads: request() and take() come from the
// tier's owner; the thread only touches the queue, the map and its own store.
//
// Invariants (under the mutex): a hash is in at most one queued or running lookup (in_flight_),
// and never both in flight and fetched (so take() waits only for what it does not hold);
// fetched_bytes_ is the sum of the kept values' sizes; every entry of fetched_ has one name in
// fetched_order_ carrying its `kept` number, and names whose number no longer matches (taken, or
// kept again since) are stale and skipped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "radix/page_hash.h"
#include "remote/remote_store.h"

namespace radixkv::remote {

struct PrefetcherStats {
  uint64_t requests = 0;       // lookups queued
  uint64_t dropped = 0;        // lookups dropped: the queue was full
  uint64_t fetched_pages = 0;  // values the store returned to the thread
  uint64_t taken_pages = 0;    // values take() handed to load()
  uint64_t errors = 0;         // lookups that failed, whole or in part (down, slow, refused)
  uint64_t unavailable = 0;    // lookups the store refused untried (waiting out its backoff)
  uint64_t answered = 0;       // lookups the store answered, whole or in part
  std::string first_error;     // the first failure's message ("" without one)
};

class Prefetcher {
 public:
  using Clock = std::chrono::steady_clock;

  // Throws std::invalid_argument for a queue, map or byte bound of 0.
  Prefetcher(std::unique_ptr<RemoteStore> store, std::size_t queue, std::size_t pages,
             std::size_t bytes);
  // Stops after the lookup in flight, if any; what is queued is dropped.
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  void request(std::vector<PageHash> hashes, std::vector<std::string> keys);

  // What take() found for the leading pages of `hashes`.
  struct Taken {
    std::vector<std::string> values;  // the leading run the store holds, in order
    // The run ended at a page the store does not hold, or one still in flight at the deadline:
    // nothing after it is worth asking for now.
    bool ended = false;
  };
  // Waits for pages in flight until `deadline` (none: does not wait).
  Taken take(std::span<const PageHash> hashes, std::optional<Clock::time_point> deadline);

  // Blocks until no lookup is queued or in flight. For tests.
  void drain();
  PrefetcherStats stats() const;

 private:
  void run();
  void keep(const PageHash& hash, std::optional<std::string> value);

  struct Lookup {
    std::vector<PageHash> hashes;
    std::vector<std::string> keys;
  };

  struct Kept {
    std::optional<std::string> value;
    uint64_t kept;  // its name's number in fetched_order_
  };
  struct KeptName {
    PageHash hash;
    uint64_t kept;
  };
  void forget_oldest();

  std::unique_ptr<RemoteStore> store_;
  const std::size_t queue_limit_, pages_limit_, bytes_limit_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<Lookup> queue_;
  std::unordered_set<PageHash, PageHashKey> in_flight_;  // queued or being fetched
  std::unordered_map<PageHash, Kept, PageHashKey> fetched_;
  std::deque<KeptName> fetched_order_;  // oldest first; may hold stale names
  uint64_t next_kept_ = 0;
  std::size_t fetched_bytes_ = 0;
  bool busy_ = false, stop_ = false;
  PrefetcherStats stats_;
  std::thread thread_;
};

}  // namespace radixkv::remote
