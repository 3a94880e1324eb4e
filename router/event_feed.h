// EventFeed: follows N workers' KV event streams (vLLM's protocol, events/wire_protocol.h) from one
// thread, and hands every batch to a sink in seq order, exactly once, per worker.
//
// Per worker: a SUB socket on its PUB endpoint and a DEALER socket on its replay endpoint.
//   - At start the feed asks for a replay from seq 0, so a router that starts (or restarts) after
//     the worker learns everything the worker still buffers.
//   - A batch whose seq is past the next one expected is held, and the missing ones are fetched
//     through replay; duplicates (seq already applied) are ignored.
//   - A replay that skips a batch (the worker's buffer no longer holds it, or the worker dropped
//     it) and a batch that does not decode make the worker's view unknown:
//     the sink's lost() is called (the router clears the worker's entries), and the feed goes on
//     from the next batch it has. Its index may then miss pages, but never holds a stale one.
//   - Liveness: a worker silent for `probe_after` is sent a replay request from its next seq (a
//     live one answers at once, with at least the end marker, and any tail batch the PUB socket
//     lost comes with it). No answer within `timeout`: the worker is down, lost() is called, and
//     the feed keeps asking from seq 0 until it answers again (a restarted worker counts from 0).
//   - Bounds against a hostile or broken publisher: a message past `max_batch_bytes` makes ZeroMQ
//     drop the connection (the feed reconnects; the worker goes down if it keeps doing so); at most
//     kMaxHeldBatches PUB batches (kMaxHeldBytes) wait for a gap, later ones are left to replay; a
//     held batch that the next replay does not supply although it was received before that replay
//     was asked for is no batch the worker has (a forged seq, 2^64 - 1 say): it is discarded and
//     counted, and never asked for again (it once made a replay storm of ~3,000 requests a second).
//   - A worker given a data_parallel_rank accepts only batches of that rank (or none): a batch of
//     another is refused as a decode error (the endpoints are those of another rank).
//
// The sink is called on the feed's thread. Endpoints are checked in the constructor (throws
// std::invalid_argument naming the worker and the endpoint).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "events/kv_event.h"

namespace radixkv::router {

struct WorkerEndpoints {
  std::string name;
  std::string pub;     // the worker's PUB endpoint (the feed connects to it)
  std::string replay;  // the worker's ROUTER replay endpoint
  std::optional<int64_t> data_parallel_rank{};  // when set, the rank its batches must carry
};

struct FeedOptions {
  std::string topic;  // subscribed prefix; vLLM's default ""
  std::chrono::milliseconds timeout{10'000};
  std::chrono::milliseconds probe_after{2'500};
  size_t max_batch_bytes = 64u << 20;
};

inline constexpr size_t kMaxHeldBatches = 10'000;
inline constexpr size_t kMaxHeldBytes = 64u << 20;

enum class WorkerState { kConnecting, kUp, kDown };
std::string_view to_string(WorkerState state);

struct WorkerFeedStatus {
  std::string name;
  WorkerState state = WorkerState::kConnecting;
  uint64_t next_seq = 0;
  uint64_t batches = 0;          // handed to the sink
  uint64_t replay_requests = 0;  // sent
  uint64_t gaps_unfilled = 0;
  uint64_t decode_errors = 0;
  uint64_t times_down = 0;  // silent past the timeout
  uint64_t discarded = 0;   // PUB batches dropped: forged seqs, or past the held bounds
};

struct FeedSink {
  std::function<void(size_t worker, const events::EventBatch&)> batch;
  std::function<void(size_t worker, std::string_view why)> lost;
};

class EventFeed {
 public:
  EventFeed(std::vector<WorkerEndpoints> workers, FeedOptions options, FeedSink sink);
  ~EventFeed();
  EventFeed(const EventFeed&) = delete;
  EventFeed& operator=(const EventFeed&) = delete;

  void start();
  void stop();  // joins the thread; idempotent
  std::vector<WorkerFeedStatus> status() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace radixkv::router
