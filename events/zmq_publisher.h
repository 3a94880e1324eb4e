// ZmqEventPublisher: publishes KV event batches with vLLM's protocol (events/wire_protocol.h) from
// one thread of its own, so that the thread producing batches (the runtime's) never waits on the
// network.
//
//   publish(batch)  stamps the next seq and queues the batch; never blocks: when `queue_batches`
//                   are already waiting the batch is dropped and counted (events/batch_queue.h:
//                   subscribers see the gap in seq). The publisher thread encodes each batch
//                   (events/event_codec.h), sends (topic, seq, payload) on the PUB socket and keeps
//                   (seq, payload) in the replay buffer (the last `replay_batches`).
//   replay          the ROUTER socket answers replay requests between batches, as vLLM's does.
//   close()         stops taking batches, publishes what is queued, then keeps answering replay
//                   requests for `linger` seconds after the last batch went out (so a late
//                   subscriber can still fetch everything from seq 0), then closes the sockets.
//                   The destructor calls it.
//
// The sockets are bound (or connected) in the constructor, which throws std::invalid_argument
// naming the endpoint when it is malformed (events/endpoint.h), when binding or connecting fails,
// or when an option is out of range; bound_*_endpoint() give the
// real addresses ("tcp://127.0.0.1:*" picks a free port). publish() and stats() may be called from
// any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "events/event_codec.h"
#include "events/kv_event.h"

namespace radixkv::events {

struct PublisherOptions {
  std::string endpoint = "tcp://*:5557";  // PUB (vLLM's default)
  std::string replay_endpoint;            // ROUTER; empty: no replay socket
  std::string topic;                      // vLLM's default: ""
  EventEncoding encoding = EventEncoding::kMap;
  size_t replay_batches = 10'000;  // vLLM's buffer_steps
  size_t queue_batches = 10'000;   // waiting for the publisher thread
  int pub_hwm = 100'000;           // ZeroMQ high-water mark of the PUB socket (vLLM's hwm)
  std::chrono::milliseconds linger{0};
};

struct PublisherStats {
  uint64_t published = 0;        // batches sent on the PUB socket
  uint64_t dropped = 0;          // batches dropped because the queue was full
  uint64_t replay_requests = 0;  // well-formed replay requests answered
  uint64_t replayed = 0;         // batches sent in answer to them
  uint64_t bad_requests = 0;     // replay requests ignored as malformed
};

class ZmqEventPublisher {
 public:
  explicit ZmqEventPublisher(PublisherOptions options);
  ~ZmqEventPublisher();
  ZmqEventPublisher(const ZmqEventPublisher&) = delete;
  ZmqEventPublisher& operator=(const ZmqEventPublisher&) = delete;

  // False when the batch was dropped (queue full). Throws std::logic_error after close().
  bool publish(EventBatch batch);
  void close();

  const std::string& bound_endpoint() const;
  const std::string& bound_replay_endpoint() const;  // empty without a replay socket
  PublisherStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace radixkv::events
