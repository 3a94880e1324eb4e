// The KV event flags of `radixkv replay` (docs/cluster.md): the replayed cache publishes its
// changes in vLLM's wire format while it runs, as an engine would.
//
//   --kv-events ENDPOINT         PUB socket, e.g. tcp://*:5557 (binds when the host is * or ::,
//                                connects otherwise: vLLM's rule); tcp://127.0.0.1:* binds a free
//                                port. The endpoints actually used are printed on stderr first.
//   --kv-events-replay ENDPOINT  ROUTER socket answering replay requests (always binds)
//   --kv-events-topic TOPIC      (default "")
//   --kv-events-encoding NAME    map (vLLM's current encoding, the default) or array
//   --kv-events-buffer N         batches kept for replay (default 10,000: vLLM's buffer_steps)
//   --kv-events-linger SECONDS   after the report, keep answering replay requests this long
//   --dump-pages FILE            the cache's final pages as JSON [[medium, block hash], ...],
//                                sorted: what a consumer of the events must end up holding
// One batch per request in cache mode, per runtime call in engine mode; the report and --json add
// kv_events_published. A replay runs faster than an engine, so the queue in front of the publisher
// thread is long (kReplayQueueBatches); a batch dropped there anyway is reported on stderr.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "events/event_batcher.h"
#include "events/zmq_publisher.h"
#include "radix/radix_tree.h"
#include "tools/cli/flags.h"

namespace radixkv::tools {

struct EventsFlags {
  std::string endpoint, replay_endpoint, topic, encoding = "map", dump_pages;
  uint64_t buffer = 10'000;
  double linger_seconds = 0;
};

inline constexpr size_t kReplayQueueBatches = 1'000'000;

void declare_events_flags(CommandLine& cli, EventsFlags& flags);
// Throws UsageError naming the flag: a --kv-events-* flag without --kv-events, a bad encoding, an
// endpoint that is not one (events/endpoint.h: tcp://256.1.1.1:5557, a connect to port *), a
// --dump-pages path that cannot be written (tools/cli/output_path.h).
void check_events_flags(const CommandLine& cli, const EventsFlags& flags);

// The publisher and the batcher in front of it, for the one replay of a run.
class EventsOutput {
 public:
  // Binds the sockets and prints their endpoints on `err`. Throws UsageError naming the flag whose
  // endpoint cannot be used.
  EventsOutput(const CommandLine& cli, const EventsFlags& flags, uint32_t page_tokens,
               std::ostream& err);
  TierEvents* events() { return &batcher_; }
  uint64_t published() const { return batcher_.batches_flushed(); }
  // Publishes what is queued, keeps answering replay requests for --kv-events-linger, closes.
  // Returns false (with a message on `err`) when batches were dropped.
  bool close(std::ostream& err);

 private:
  std::unique_ptr<events::ZmqEventPublisher> publisher_;
  events::EventBatcher batcher_;
};

// --dump-pages: the tree's pages per tier as sorted JSON pairs. False (and a message) on an I/O
// error.
bool dump_pages(const RadixTree& tree, const std::string& path, std::ostream& err);

}  // namespace radixkv::tools
