// KV events against independent Python code (Debian's python3-msgpack and python3-zmq): the encoder
// byte for byte against msgpack packing vLLM's structs, and a subscriber written for the test that
// joins late, fetches what it missed through the replay socket and rebuilds the page set.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "events/event_batcher.h"
#include "events/event_codec.h"
#include "events/zmq_publisher.h"
#include "tests/child_process.h"
#include "tests/event_script.h"

using namespace radixkv;
using namespace std::chrono_literals;
using radixkv::testing::ChildProcess;

namespace {

const std::string kPython = RADIXKV_DEBIAN_PYTHON;
const std::string kTests = RADIXKV_TESTS_DIR;

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

std::string to_hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// Each block's extra keys as the hex of their msgpack bytes (the oracle unpacks them).
nlohmann::json extra_keys_json(const events::BlockStored& s) {
  if (!s.extra_keys) return nullptr;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& keys : *s.extra_keys)
    list.push_back(keys ? nlohmann::json(to_hex(*keys)) : nullptr);
  return list;
}

nlohmann::json to_json(const events::EventBatch& batch) {
  nlohmann::json list = nlohmann::json::array();
  for (const events::KvEvent& event : batch.events) {
    if (const auto* s = std::get_if<events::BlockStored>(&event)) {
      list.push_back(
          {{"type", "BlockStored"},
           {"block_hashes", s->block_hashes},
           {"parent_block_hash", optional_json(s->parent_block_hash)},
           {"token_ids", s->token_ids},
           {"block_size", s->block_size},
           {"lora_id", optional_json(s->lora_id)},
           {"medium", optional_json(s->medium)},
           {"lora_name", optional_json(s->lora_name)},
           {"extra_keys", extra_keys_json(*s)},
           {"group_idx", optional_json(s->group_idx)},
           {"kv_cache_spec_kind", optional_json(s->kv_cache_spec_kind)},
           {"kv_cache_spec_sliding_window", optional_json(s->kv_cache_spec_sliding_window)}});
    } else if (const auto* r = std::get_if<events::BlockRemoved>(&event)) {
      list.push_back({{"type", "BlockRemoved"},
                      {"block_hashes", r->block_hashes},
                      {"medium", optional_json(r->medium)},
                      {"group_idx", optional_json(r->group_idx)},
                      {"reason", optional_json(r->reason)}});
    } else {
      list.push_back({{"type", "AllBlocksCleared"}});
    }
  }
  return {{"ts", batch.ts},
          {"events", std::move(list)},
          {"data_parallel_rank", optional_json(batch.data_parallel_rank)}};
}

void append_framed(std::ofstream& out, const std::string& payload) {
  const auto n = static_cast<uint32_t>(payload.size());
  const char length[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  out.write(length, 4);
  out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
}

}  // namespace

TEST_CASE("events: Python's msgpack packs vLLM's structs to the encoder's bytes, both encodings") {
  if (const auto why = testing::python_missing(kPython)) RADIXKV_SKIP_OUTSIDE_CI(*why);
  std::mt19937_64 rng(23);
  nlohmann::json described = nlohmann::json::array();
  std::ofstream map_out(testing::scratch_path("map.bin"), std::ios::binary);
  std::ofstream array_out(testing::scratch_path("array.bin"), std::ios::binary);
  for (int i = 0; i < 300; ++i) {
    const events::EventBatch batch = testing::random_event_batch(rng);
    described.push_back(to_json(batch));
    append_framed(map_out, events::encode_batch(batch, events::EventEncoding::kMap));
    append_framed(array_out, events::encode_batch(batch, events::EventEncoding::kArray));
  }
  map_out.close();
  array_out.close();
  std::ofstream(testing::scratch_path("batches.json")) << described.dump();

  ChildProcess oracle({kPython, kTests + "/kv_events_oracle.py",
                       testing::scratch_path("batches.json"), testing::scratch_path("map.bin"),
                       testing::scratch_path("array.bin")});
  const std::optional<std::string> verdict = oracle.read_line(60s);
  CHECK(oracle.wait(60s) == 0);
  REQUIRE(verdict);
  // Removals with radixkv's reason among them, read by vLLM's fields as vLLM's events.
  size_t reasons = 0;
  for (const nlohmann::json& b : described) {
    for (const nlohmann::json& e : b["events"])
      reasons += e.contains("reason") && e["reason"].is_string();
  }
  CHECK(reasons > 20);
  CHECK(*verdict == "ok: 300 batches, both encodings, " + std::to_string(reasons) +
                        " reasons skipped by vLLM's fields");
}

TEST_CASE("events: a late Python subscriber rebuilds the publisher's pages through replay") {
  if (const auto why = testing::python_missing(kPython)) RADIXKV_SKIP_OUTSIDE_CI(*why);
  for (events::EventEncoding encoding :
       {events::EventEncoding::kMap, events::EventEncoding::kArray}) {
    CAPTURE(events::to_string(encoding));
    // The whole stream first, so that the subscriber can be told how many batches to expect.
    std::vector<events::EventBatch> stream;
    events::EventBatcherOptions batcher_options;
    batcher_options.page_tokens = 4;
    events::EventBatcher batcher(batcher_options,
                                 [&](events::EventBatch&& b) { stream.push_back(std::move(b)); });
    testing::ScriptedCache cache({.seed = 31, .page_tokens = 4, .clears = true}, batcher);
    for (int step = 0; step < 400; ++step) cache.step();

    events::PublisherOptions options;
    options.endpoint = "tcp://127.0.0.1:*";
    options.replay_endpoint = "tcp://127.0.0.1:*";
    options.topic = "kv@test";
    options.encoding = encoding;
    events::ZmqEventPublisher publisher(options);
    const size_t early = stream.size() / 2;
    for (size_t i = 0; i < early; ++i) publisher.publish(stream[i]);  // before it subscribes

    const std::string out = testing::scratch_path("subscriber.json");
    ChildProcess subscriber({kPython, kTests + "/kv_events_subscriber.py", "--pub",
                             publisher.bound_endpoint(), "--replay",
                             publisher.bound_replay_endpoint(), "--topic", "kv@test", "--batches",
                             std::to_string(stream.size()), "--out", out, "--timeout", "60"});
    REQUIRE(subscriber.read_line(60s) == "subscribed");
    for (size_t i = early; i < stream.size(); ++i) {
      publisher.publish(stream[i]);
      std::this_thread::sleep_for(1ms);
    }
    const std::optional<std::string> done = subscriber.read_line(90s);
    REQUIRE(subscriber.wait(30s) == 0);
    REQUIRE(done);
    MESSAGE(*done);
    CHECK(done->starts_with("done: " + std::to_string(stream.size()) + " batches"));

    std::set<testing::MediumBlock> rebuilt;
    for (const auto& pair : nlohmann::json::parse(std::ifstream(out))) {
      rebuilt.emplace(pair[0].get<std::string>(), pair[1].get<uint64_t>());
    }
    CHECK(rebuilt == cache.truth());
    CHECK_FALSE(rebuilt.empty());
    const auto clears = std::count_if(stream.begin(), stream.end(), [](const auto& batch) {
      return std::any_of(batch.events.begin(), batch.events.end(), [](const auto& e) {
        return std::holds_alternative<events::AllBlocksCleared>(e);
      });
    });
    CHECK(clears > 0);  // the subscriber met every kind of event
    CHECK(publisher.stats().replay_requests >= 1);
    CHECK(publisher.stats().dropped == 0);
  }
}

namespace {

const std::string kRadixkv = RADIXKV_BINARY;

// `radixkv` with its stderr on the stdout the test reads.
std::vector<std::string> radixkv_argv(std::vector<std::string> args) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", kRadixkv};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The JSON report a `radixkv replay --json` process prints, skipping its other lines.
nlohmann::json json_report(ChildProcess& process) {
  const std::optional<std::string> line = process.read_line_starting("{", 120s);
  REQUIRE(line);
  return nlohmann::json::parse(*line);
}

std::set<testing::MediumBlock> read_pages(const std::string& path) {
  std::set<testing::MediumBlock> pages;
  for (const auto& pair : nlohmann::json::parse(std::ifstream(path))) {
    pages.emplace(pair[0].get<std::string>(), pair[1].get<uint64_t>());
  }
  return pages;
}

}  // namespace

TEST_CASE("events: a Python subscriber rebuilds a real `radixkv replay`'s final pages") {
  if (const auto why = testing::python_missing(kPython)) RADIXKV_SKIP_OUTSIDE_CI(*why);
  const std::string trace = testing::scratch_path("chats.jsonl");
  ChildProcess gen(radixkv_argv({"gen", "--conversations", "300", "--seed", "5", "--out", trace}));
  REQUIRE(gen.wait(60s) == 0);
  // Cache mode with a host tier ("CPU" events too) in one encoding, engine mode in the other;
  // both evict (small caches).
  const std::vector<std::vector<std::string>> runs = {
      {"--mode", "cache", "--capacity-tokens", "30000", "--host-capacity-tokens", "60000",
       "--kv-events-encoding", "map"},
      {"--mode", "engine", "--pool-bytes", "6GiB", "--kv-events-encoding", "array"}};
  for (const std::vector<std::string>& mode : runs) {
    CAPTURE(mode[1]);
    std::vector<std::string> args = {"replay", "--trace",     trace,
                                     "--json", "--kv-events", "tcp://127.0.0.1:*"};
    args.insert(args.end(), mode.begin(), mode.end());
    // The replay is deterministic: a first run says how many batches the second will publish.
    ChildProcess counting(radixkv_argv(args));
    const nlohmann::json counted = json_report(counting);
    REQUIRE(counting.wait(60s) == 0);
    const uint64_t batches = counted["kv_events_published"].get<uint64_t>();
    CHECK(counted["evictions"].get<uint64_t>() > 0);

    const std::string pages = testing::scratch_path("pages-" + mode[1] + ".json");
    for (const char* extra :
         {"--kv-events-replay", "tcp://127.0.0.1:*", "--kv-events-topic", "kv",
          "--kv-events-linger", "120", "--kv-events-buffer", "1e6", "--dump-pages"}) {
      args.emplace_back(extra);
    }
    args.push_back(pages);
    ChildProcess replay(radixkv_argv(args));
    const std::optional<std::string> bound =
        replay.read_line_starting("radixkv replay: kv events on ", 60s);
    REQUIRE(bound);
    // "radixkv replay: kv events on PUB, replay on REPLAY"
    const size_t on = bound->find(" on ") + 4, comma = bound->find(", replay on ");
    REQUIRE(comma != std::string::npos);
    const std::string pub = bound->substr(on, comma - on), router = bound->substr(comma + 12);
    const std::string out = testing::scratch_path("rebuilt-" + mode[1] + ".json");
    ChildProcess subscriber({kPython, kTests + "/kv_events_subscriber.py", "--pub", pub, "--replay",
                             router, "--topic", "kv", "--batches", std::to_string(batches), "--out",
                             out, "--timeout", "90"});
    const std::optional<std::string> done = subscriber.read_line_starting("done: ", 120s);
    REQUIRE(subscriber.wait(30s) == 0);
    REQUIRE(done);
    MESSAGE(*done);
    CHECK(json_report(replay)["kv_events_published"].get<uint64_t>() == batches);
    const std::set<testing::MediumBlock> rebuilt = read_pages(out);
    CHECK(rebuilt == read_pages(pages));
    CHECK_FALSE(rebuilt.empty());
    if (mode[1] == "cache") {
      CHECK(std::any_of(rebuilt.begin(), rebuilt.end(),
                        [](const testing::MediumBlock& b) { return b.first == "CPU"; }));
    }
    replay.signal(SIGTERM);  // it would linger for two minutes
    CHECK(replay.wait(20s));
  }
}

TEST_CASE("events: `radixkv replay --kv-events` lingers, then exits 0") {
  ChildProcess replay(radixkv_argv({"replay", "--kv-events", "tcp://127.0.0.1:*",
                                    "--kv-events-linger", "0.5", "--capacity-tokens", "1e5"}));
  CHECK(replay.read_line_starting("  kv events ", 60s));
  CHECK(replay.wait(30s) == 0);
}
