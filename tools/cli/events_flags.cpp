#include "tools/cli/events_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "events/block_hash.h"
#include "events/endpoint.h"
#include "events/wire_protocol.h"
#include "tools/cli/cli.h"
#include "tools/cli/output_path.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

constexpr const char* kEventFlags[] = {"--kv-events-replay",   "--kv-events-topic",
                                       "--kv-events-encoding", "--kv-events-buffer",
                                       "--kv-events-linger",   "--dump-pages"};

events::PublisherOptions publisher_options(const EventsFlags& flags) {
  events::PublisherOptions options;
  options.endpoint = flags.endpoint;
  options.replay_endpoint = flags.replay_endpoint;
  options.topic = flags.topic;
  options.encoding = events::parse_event_encoding(flags.encoding);
  options.replay_batches = flags.buffer;
  options.queue_batches = kReplayQueueBatches;
  options.linger = std::chrono::milliseconds(std::llround(flags.linger_seconds * 1000));
  return options;
}

std::unique_ptr<events::ZmqEventPublisher> make_publisher(const CommandLine& cli,
                                                          const EventsFlags& flags) {
  try {
    return std::make_unique<events::ZmqEventPublisher>(publisher_options(flags));
  } catch (const std::invalid_argument& e) {
    // The publisher names the endpoint; say which flag gave it.
    const bool replay = !flags.replay_endpoint.empty() &&
                        std::string_view(e.what()).find(flags.replay_endpoint) != std::string::npos;
    throw UsageError(fmt::format(
        "{}: {}", cli.describe(replay ? "--kv-events-replay" : "--kv-events"), e.what()));
  }
}

events::EventBatcherOptions batcher_options(uint32_t page_tokens) {
  events::EventBatcherOptions options;
  options.page_tokens = page_tokens;
  return options;
}

}  // namespace

void declare_events_flags(CommandLine& cli, EventsFlags& f) {
  cli.text("--kv-events", f.endpoint, "ENDPOINT",
           "publish KV events in vLLM's wire format on this ZeroMQ PUB endpoint, e.g. "
           "tcp://*:5557 (docs/cluster.md)");
  cli.text("--kv-events-replay", f.replay_endpoint, "ENDPOINT",
           "answer replay requests for missed event batches on this ROUTER endpoint");
  cli.text("--kv-events-topic", f.topic, "TOPIC", "topic of the event messages (default \"\")");
  cli.text("--kv-events-encoding", f.encoding, "NAME",
           "map (vLLM's current encoding, the default) or array (the older one)");
  cli.count("--kv-events-buffer", f.buffer, "N",
            "event batches kept for replay requests (default 10,000)", 1, 100'000'000);
  cli.real("--kv-events-linger", f.linger_seconds, "SECONDS",
           "after the replay, keep answering replay requests this long (default 0)", 0, 86400);
  cli.text("--dump-pages", f.dump_pages, "FILE",
           "write the cache's final pages as JSON [medium, block hash] pairs (to check a consumer "
           "of the events)");
}

void check_events_flags(const CommandLine& cli, const EventsFlags& f) {
  if (!cli.given("--kv-events")) {
    for (const char* flag : kEventFlags) {
      if (cli.given(flag)) {
        throw UsageError(fmt::format("{}: needs --kv-events", cli.describe(flag)));
      }
    }
  }
  try {
    events::parse_event_encoding(f.encoding);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{}: {}", cli.describe("--kv-events-encoding"), e.what()));
  }
  // The endpoints' form, before the trace is read (the sockets are made after the plan).
  const auto check = [&](const char* flag, const std::string& endpoint, events::EndpointUse use) {
    if (!cli.given(flag)) return;
    try {
      events::check_endpoint(endpoint, use);
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}: {}", cli.describe(flag), e.what()));
    }
  };
  check("--kv-events", f.endpoint,
        events::pub_endpoint_binds(f.endpoint) ? events::EndpointUse::kBind
                                               : events::EndpointUse::kConnect);
  check("--kv-events-replay", f.replay_endpoint, events::EndpointUse::kBind);
  if (cli.given("--dump-pages")) check_output_path(cli, "--dump-pages", f.dump_pages);
}

EventsOutput::EventsOutput(const CommandLine& cli, const EventsFlags& flags, uint32_t page_tokens,
                           std::ostream& err)
    : publisher_(make_publisher(cli, flags)),
      batcher_(batcher_options(page_tokens),
               [this](events::EventBatch&& batch) { publisher_->publish(std::move(batch)); }) {
  err << fmt::format("radixkv replay: kv events on {}", publisher_->bound_endpoint());
  if (!publisher_->bound_replay_endpoint().empty()) {
    err << fmt::format(", replay on {}", publisher_->bound_replay_endpoint());
  }
  err << std::endl;
}

bool EventsOutput::close(std::ostream& err) {
  publisher_->close();
  const events::PublisherStats stats = publisher_->stats();
  if (stats.dropped == 0) return true;
  err << fmt::format(
      "radixkv replay: error: {} of {} kv event batches were dropped (the publisher fell behind)\n",
      stats.dropped, published());
  return false;
}

bool dump_pages(const RadixTree& tree, const std::string& path, std::ostream& err) {
  std::vector<std::pair<std::string, uint64_t>> pages;
  const events::EventBatcherOptions names;
  for (const auto& [tier, medium] :
       {std::pair{Tier::kDevice, names.device_medium}, std::pair{Tier::kHost, names.host_medium}}) {
    if (!tree.page_hashes()) break;
    for (const PageHash& hash : tree.tier_page_hashes(tier)) {
      pages.emplace_back(medium, events::block_hash(hash));
    }
  }
  std::sort(pages.begin(), pages.end());
  nlohmann::json json = nlohmann::json::array();
  for (const auto& [medium, hash] : pages) json.push_back({medium, hash});
  std::ofstream file(path, std::ios::trunc);
  file << json.dump() << '\n';
  file.close();
  if (!file) err << fmt::format("radixkv replay: error: cannot write --dump-pages '{}'\n", path);
  return static_cast<bool>(file);
}

}  // namespace radixkv::tools
