// radixkv_event_script: a worker for the integration tests that publishes a scripted KV event
// stream (tests/event_script.h) with the real publisher, as an engine would.
//
//   radixkv_event_script --seed S --steps N [--interval-ms MS] [--encoding map|array]
//       [--pin BASE:PAGES ...] [--page-tokens P] [--linger-ms MS] [--truth FILE] [--stay]
//
// Prints "endpoints PUB REPLAY" once its sockets are bound (loopback, free ports), publishes N
// runtime calls' batches (one every MS), writes the final [medium, block hash] pairs as JSON to
// FILE, prints "published BATCHES", then keeps answering replay requests for --linger-ms and exits
// 0 — or, with --stay, keeps running until SIGTERM. --pin stores the tokens BASE, BASE+1, ... of
// PAGES pages in namespace 0 first, and keeps them.
#include <csignal>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include <CLI/CLI.hpp>

#include "events/event_batcher.h"
#include "events/zmq_publisher.h"
#include "tests/event_script.h"

int main(int argc, char** argv) {
  using namespace radixkv;
  CLI::App app{"publishes a scripted KV event stream (a test worker)"};
  uint64_t seed = 1;
  int steps = 100, interval_ms = 0, linger_ms = 0;
  uint32_t page_tokens = 4;
  std::string encoding = "map", truth_path;
  std::vector<std::string> pins;
  bool stay = false;
  app.add_option("--seed", seed);
  app.add_option("--steps", steps);
  app.add_option("--interval-ms", interval_ms);
  app.add_option("--encoding", encoding);
  app.add_option("--pin", pins);
  app.add_option("--page-tokens", page_tokens);
  app.add_option("--linger-ms", linger_ms);
  app.add_option("--truth", truth_path);
  app.add_flag("--stay", stay);
  CLI11_PARSE(app, argc, argv);

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  events::PublisherOptions options;
  options.endpoint = "tcp://127.0.0.1:*";
  options.replay_endpoint = "tcp://127.0.0.1:*";
  options.encoding = events::parse_event_encoding(encoding);
  options.linger = std::chrono::milliseconds(linger_ms);
  events::ZmqEventPublisher publisher(options);
  std::cout << "endpoints " << publisher.bound_endpoint() << ' '
            << publisher.bound_replay_endpoint() << std::endl;

  events::EventBatcherOptions batcher_options;
  batcher_options.page_tokens = page_tokens;
  events::EventBatcher batcher(batcher_options,
                               [&](events::EventBatch&& b) { publisher.publish(std::move(b)); });
  testing::ScriptedCache cache({.seed = seed, .page_tokens = page_tokens}, batcher);
  for (const std::string& pin : pins) {
    const size_t colon = pin.find(':');
    cache.pin_prefix(0, static_cast<uint32_t>(std::stoul(pin.substr(colon + 1))),
                     static_cast<TokenId>(std::stol(pin.substr(0, colon))));
  }
  for (int step = 0; step < steps; ++step) {
    cache.step();
    if (interval_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
  if (!truth_path.empty()) {
    nlohmann::json truth = nlohmann::json::array();
    for (const auto& [medium, hash] : cache.truth()) truth.push_back({medium, hash});
    std::ofstream(truth_path) << truth.dump();
  }
  std::cout << "published " << batcher.batches_flushed() << std::endl;
  if (stay) {
    int signal = 0;
    sigwait(&stop, &signal);
  }
  publisher.close();  // lingers
  return publisher.stats().dropped == 0 ? 0 : 1;
}
