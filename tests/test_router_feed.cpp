// The router's event feed against a publisher the test scripts frame by frame (seq gaps it fills
// through replay, gaps replay cannot fill, payloads that do not decode, a worker that goes silent
// and comes back), then the whole router service in-process over two real publishers.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <httplib.h>

#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "events/event_batcher.h"
#include "events/event_codec.h"
#include "events/zmq_publisher.h"
#include "router/event_feed.h"
#include "router/router_service.h"
#include "tests/event_script.h"
#include "tests/router_test_client.h"
#include "tests/zmq_test_client.h"

using namespace radixkv;
using namespace radixkv::router;
using namespace std::chrono_literals;
using radixkv::testing::eventually;
using radixkv::testing::router_index;
using radixkv::testing::router_metric;

namespace {

std::string payload(uint64_t n) {
  return events::encode_batch({static_cast<double>(n), {}, 0}, events::EventEncoding::kMap);
}

// A publisher whose PUB frames the test sends one by one, and whose replay socket answers from a
// buffer the test fills (or stays silent while `answering` is false), on a thread of its own.
class ScriptedPublisher {
 public:
  ScriptedPublisher()
      : pub_(context_, zmq::socket_type::pub), router_(context_, zmq::socket_type::router) {
    pub_.bind("tcp://127.0.0.1:*");
    router_.set(zmq::sockopt::linger, 0);
    router_.set(zmq::sockopt::sndhwm, 0);  // a ROUTER drops past it: every replay goes out whole
    router_.bind("tcp://127.0.0.1:*");
    pub_endpoint_ = pub_.get(zmq::sockopt::last_endpoint);
    replay_endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedPublisher() {
    stop_ = true;
    thread_.join();
  }

  WorkerEndpoints endpoints(std::string name) const {
    return {std::move(name), pub_endpoint_, replay_endpoint_};
  }
  void buffer(uint64_t seq, std::string bytes) {
    std::lock_guard lock(mutex_);
    buffer_[seq] = std::move(bytes);
  }
  void send(uint64_t seq) {
    std::string bytes;
    {
      std::lock_guard lock(mutex_);
      bytes = buffer_.at(seq);
    }
    const std::string seq_bytes = events::encode_seq(static_cast<int64_t>(seq));
    const std::array<zmq::const_buffer, 3> message = {zmq::str_buffer(""), zmq::buffer(seq_bytes),
                                                      zmq::buffer(bytes)};
    zmq::send_multipart(pub_, message);
  }
  void answering(bool on) { answering_ = on; }
  // Replays serve no batch past `seq`, as a publisher answering before it published the rest.
  void serve_up_to(uint64_t seq) { serve_up_to_ = seq; }
  int requests() const { return requests_; }

 private:
  void serve() {
    while (!stop_) {
      const auto request = radixkv::testing::receive(router_, 10ms);
      if (!request || !answering_) continue;
      ++requests_;
      const int64_t start = *events::decode_seq((*request)[2]);
      std::lock_guard lock(mutex_);
      for (auto it = buffer_.lower_bound(static_cast<uint64_t>(start));
           it != buffer_.end() && it->first <= serve_up_to_; ++it) {
        const std::string seq = events::encode_seq(static_cast<int64_t>(it->first));
        const std::array<zmq::const_buffer, 4> m = {zmq::buffer((*request)[0]), zmq::const_buffer(),
                                                    zmq::buffer(seq), zmq::buffer(it->second)};
        zmq::send_multipart(router_, m);
      }
      const std::string end = events::encode_seq(events::kEndOfReplay);
      const std::array<zmq::const_buffer, 4> m = {zmq::buffer((*request)[0]), zmq::const_buffer(),
                                                  zmq::buffer(end), zmq::const_buffer()};
      zmq::send_multipart(router_, m);
    }
  }

  zmq::context_t context_;
  zmq::socket_t pub_, router_;  // router_ belongs to the serving thread once it runs
  std::string pub_endpoint_, replay_endpoint_;
  std::mutex mutex_;
  std::map<uint64_t, std::string> buffer_;
  std::atomic<bool> answering_{true}, stop_{false};
  std::atomic<int> requests_{0};
  std::atomic<uint64_t> serve_up_to_{~uint64_t{0}};
  std::thread thread_;
};

// What the feed handed over: "b<ts>" per batch, "lost" per loss, in order. A sink given a delay
// takes that long over each batch, as a router with a big index under load.
struct SinkLog {
  FeedSink sink(std::chrono::microseconds delay = {}) {
    return {[this, delay](size_t, const events::EventBatch& b) {
              std::this_thread::sleep_for(delay);
              add(fmt::format("b{}", b.ts));
            },
            [this](size_t, std::string_view) { add("lost"); }};
  }
  void add(std::string entry) {
    std::lock_guard lock(mutex);
    entries.push_back(std::move(entry));
  }
  std::vector<std::string> snapshot() {
    std::lock_guard lock(mutex);
    return entries;
  }
  std::mutex mutex;
  std::vector<std::string> entries;
};

std::vector<std::string> batches(uint64_t from, uint64_t to) {  // "b<from>" .. "b<to - 1>"
  std::vector<std::string> out;
  for (uint64_t n = from; n < to; ++n) out.push_back(fmt::format("b{}", n));
  return out;
}
std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A feed over a scripted publisher that already buffers batches 0 .. buffered-1, started; its
// sink takes `sink_delay` over each batch.
struct StartedFeed {
  StartedFeed(uint64_t buffered, FeedOptions options, std::chrono::microseconds sink_delay = {},
              std::optional<uint64_t> serve_up_to = {}) {
    for (uint64_t n = 0; n < buffered; ++n) publisher.buffer(n, payload(n));
    if (serve_up_to) publisher.serve_up_to(*serve_up_to);
    feed = std::make_unique<EventFeed>(std::vector{publisher.endpoints("w")}, options,
                                       log.sink(sink_delay));
    feed->start();
  }

  ScriptedPublisher publisher;
  SinkLog log;
  std::unique_ptr<EventFeed> feed;
};

// The same, caught up with the buffered batches.
struct FeedRig : StartedFeed {
  FeedRig(uint64_t buffered, FeedOptions options, std::optional<uint64_t> serve_up_to = {})
      : StartedFeed(buffered, options, {}, serve_up_to) {
    const uint64_t caught_up = std::min(buffered, serve_up_to.value_or(buffered - 1) + 1);
    REQUIRE(eventually([&] { return log.snapshot().size() == caught_up; }));
    CHECK(log.snapshot() == batches(0, caught_up));
    CHECK(feed->status()[0].state == WorkerState::kUp);
  }
};

}  // namespace

TEST_CASE("router: the feed applies every batch once, in order, repairing what it can") {
  // Started after the worker: it catches up through replay from 0.
  FeedRig rig(10, {"", 400ms, 100ms});
  ScriptedPublisher& publisher = rig.publisher;
  SinkLog& log = rig.log;
  EventFeed& feed = *rig.feed;

  // The live stream; a batch missed on PUB is fetched through replay, duplicates are dropped.
  for (uint64_t n = 10; n < 15; ++n) publisher.buffer(n, payload(n));
  publisher.send(10);
  publisher.send(11);
  publisher.send(14);  // 12 and 13 are only in the replay buffer
  REQUIRE(eventually([&] { return log.snapshot().size() == 15; }));
  CHECK(log.snapshot() == batches(0, 15));

  // 15 and 16 never made it into the buffer (dropped at the publisher): the worker's view is
  // lost once, and the feed goes on from 17. A late PUB copy of 12, already applied through
  // replay, is ignored on the way.
  publisher.buffer(17, payload(17));
  publisher.send(12);
  publisher.send(17);
  REQUIRE(eventually([&] { return log.snapshot().size() == 17; }));
  CHECK(log.snapshot() == batches(0, 15) + std::vector<std::string>{"lost", "b17"});

  // A payload that does not decode loses the view too, and the next batch is applied.
  publisher.buffer(18, "not msgpack");
  publisher.buffer(19, payload(19));
  publisher.send(18);
  publisher.send(19);
  REQUIRE(eventually([&] { return log.snapshot().size() == 19; }));
  CHECK(log.snapshot().back() == "b19");
  CHECK(log.snapshot()[17] == "lost");

  WorkerFeedStatus status = feed.status()[0];
  CHECK(status.next_seq == 20);
  CHECK(status.batches == 17);  // the one that did not decode is not applied
  CHECK(status.gaps_unfilled == 1);
  CHECK(status.decode_errors == 1);
  CHECK(status.times_down == 0);
  CHECK(status.replay_requests >= 3);
  feed.stop();
}

TEST_CASE("router: a batch published after a replay's snapshot is fetched again, not lost") {
  FeedRig rig(5, {"", 2s, 1s}, 2);
  ScriptedPublisher& publisher = rig.publisher;
  SinkLog& log = rig.log;
  EventFeed& feed = *rig.feed;
  // 3 went out on PUB before the subscription was through; 4 arrives. The replay for 3 ends
  // without it (its snapshot predates 3): a hole, not a loss. The feed asks again.
  publisher.send(4);
  REQUIRE(eventually([&] { return publisher.requests() >= 3; }));
  std::this_thread::sleep_for(50ms);
  CHECK(log.snapshot() == batches(0, 3));
  publisher.serve_up_to(4);
  REQUIRE(eventually([&] { return log.snapshot().size() == 5; }));
  CHECK(log.snapshot() == batches(0, 5));
  CHECK(feed.status()[0].gaps_unfilled == 0);
  feed.stop();
}

TEST_CASE("router: a silent worker is dropped after the timeout and relearned when it answers") {
  FeedRig rig(3, {"", 300ms, 50ms});
  ScriptedPublisher& publisher = rig.publisher;
  SinkLog& log = rig.log;
  EventFeed& feed = *rig.feed;

  // Idle but answering: probes keep it up.
  const int before = publisher.requests();
  std::this_thread::sleep_for(400ms);
  CHECK(publisher.requests() > before);
  CHECK(feed.status()[0].state == WorkerState::kUp);
  CHECK(log.snapshot().size() == 3);

  publisher.answering(false);
  REQUIRE(eventually([&] { return feed.status()[0].state == WorkerState::kDown; }, 3s));
  CHECK(log.snapshot() == batches(0, 3) + std::vector<std::string>{"lost"});
  CHECK(feed.status()[0].times_down == 1);

  publisher.answering(true);  // back: everything it buffers is learned again from seq 0
  REQUIRE(eventually([&] { return log.snapshot().size() == 7; }, 3s));
  CHECK(log.snapshot() == batches(0, 3) + std::vector<std::string>{"lost"} + batches(0, 3));
  CHECK(feed.status()[0].state == WorkerState::kUp);
  feed.stop();
}

TEST_CASE("router: a sink slower than the timeout is not a silent worker") {
  // 1500 batches at 1 ms each: the replay takes the feed far longer than the 200 ms timeout, but
  // the worker answered at once. Only the worker's silence may drop it, never the feed's own work.
  StartedFeed rig(1500, {"", 200ms, 50ms}, 1ms);
  SinkLog& log = rig.log;
  EventFeed& feed = *rig.feed;
  REQUIRE(eventually([&] { return log.snapshot().size() >= 1500; }, 20s));
  std::this_thread::sleep_for(100ms);  // probes answered; nothing more may come
  CHECK(log.snapshot() == batches(0, 1500));
  CHECK(feed.status()[0].times_down == 0);
  CHECK(feed.status()[0].state == WorkerState::kUp);
  feed.stop();
}

TEST_CASE("router: stop() does not wait for a replay backlog to be applied") {
  StartedFeed rig(3000, {"", 10s, 5s}, 1ms);
  SinkLog& log = rig.log;
  EventFeed& feed = *rig.feed;
  REQUIRE(eventually([&] { return log.snapshot().size() >= 100; }, 20s));
  const size_t before_stop = log.snapshot().size();
  feed.stop();
  // The whole replay is queued by now; the feed finishes at most the pass it is in (1024
  // messages from one socket) and leaves the rest.
  const size_t applied = log.snapshot().size();
  CHECK(applied <= before_stop + 1024);
  CHECK(log.snapshot() == batches(0, applied));
}

TEST_CASE("router: the feed names a worker whose endpoint is wrong") {
  SinkLog log;
  CHECK_THROWS_WITH_AS(EventFeed({{"w9", "nonsense", "tcp://127.0.0.1:1"}}, {}, log.sink()),
                       doctest::Contains("worker w9: event endpoint nonsense: "),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(EventFeed({{"w9", "tcp://127.0.0.1:1", "nonsense"}}, {}, log.sink()),
                       doctest::Contains("worker w9: replay endpoint nonsense: "),
                       std::invalid_argument);
}

namespace {

// One worker of the in-process cluster: a scripted cache whose events go through a batcher to a
// real publisher.
struct Worker {
  Worker(uint64_t seed, events::EventEncoding encoding)
      : publisher([&] {
          events::PublisherOptions o;
          o.endpoint = "tcp://127.0.0.1:*";
          o.replay_endpoint = "tcp://127.0.0.1:*";
          o.encoding = encoding;
          return o;
        }()),
        batcher(options(), [this](events::EventBatch&& b) { publisher.publish(std::move(b)); }),
        cache({.seed = seed, .page_tokens = 4}, batcher) {}

  static events::EventBatcherOptions options() {
    events::EventBatcherOptions o;
    o.page_tokens = 4;
    return o;
  }
  WorkerEndpoints endpoints(std::string name) const {
    return {std::move(name), publisher.bound_endpoint(), publisher.bound_replay_endpoint()};
  }

  events::ZmqEventPublisher publisher;
  events::EventBatcher batcher;
  radixkv::testing::ScriptedCache cache;
};

nlohmann::json route(httplib::Client& http, const nlohmann::json& body, int expect = 200) {
  const auto res = http.Post("/route", body.dump(), "application/json");
  REQUIRE(res);
  CHECK(res->status == expect);
  return nlohmann::json::parse(res->body);
}

}  // namespace

TEST_CASE("router: the service in-process: the union of two workers' pages, and routes by it") {
  Worker w0(1, events::EventEncoding::kMap), w1(2, events::EventEncoding::kArray);
  const std::vector<TokenId> own0 = w0.cache.pin_prefix(0, 4, 5000);
  const std::vector<TokenId> own1 = w1.cache.pin_prefix(0, 3, 7000);
  const std::vector<TokenId> shared = w0.cache.pin_prefix(0, 2, 9000);
  w1.cache.pin_prefix(0, 2, 9000);
  for (int step = 0; step < 60; ++step) {
    w0.cache.step();
    w1.cache.step();
  }
  RouterOptions options;
  options.workers = {w0.endpoints("w0"), w1.endpoints("w1")};
  options.http_port = 0;
  options.worker_timeout = 2s;
  RouterService service(options);
  service.start();
  httplib::Client http("127.0.0.1", service.port());
  http.set_read_timeout(5, 0);

  // Started after the workers: everything comes through replay. More comes live.
  for (int step = 0; step < 40; ++step) {
    w0.cache.step();
    w1.cache.step();
  }
  CHECK(eventually([&] { return router_index(http, "w0") == w0.cache.truth(); }));
  CHECK(eventually([&] { return router_index(http, "w1") == w1.cache.truth(); }));

  std::vector<TokenId> request = own0;
  request.insert(request.end(), {1, 2, 3});  // and a partial page
  nlohmann::json answer = route(http, {{"tokens", request}, {"page_size", 4}});
  CHECK(answer["worker"] == "w0");
  CHECK(answer["outcome"] == "prefix_hit");
  CHECK(answer["request_blocks"] == 4.75);
  CHECK(answer["candidates"][0]["overlap_blocks"] == 4);
  CHECK(answer["candidates"][1]["overlap_blocks"] == 0);
  answer = route(http, {{"tokens", own1}, {"page_size", 4}});
  CHECK(answer["worker"] == "w1");

  // Both hold the shared prefix: the load decides.
  answer = route(
      http, {{"tokens", shared},
             {"page_size", 4},
             {"candidates", {{{"worker", "w0"}, {"load", 5}}, {{"worker", "w1"}, {"load", 1}}}}});
  CHECK(answer["worker"] == "w1");
  CHECK(answer["candidates"][0]["overlap_blocks"] == 2);
  CHECK(answer["candidates"][1]["overlap_blocks"] == 2);
  answer = route(
      http, {{"tokens", shared},
             {"page_size", 4},
             {"candidates", {{{"worker", "w0"}, {"load", 0}}, {{"worker", "w1"}, {"load", 1}}}}});
  CHECK(answer["worker"] == "w0");

  const nlohmann::json refused = route(http, {{"tokens", {1}}, {"page_size", 0}}, 400);
  CHECK(refused["error"] == "page_size: must be at least 1");
  CHECK(http.Get("/index?worker=w7")->status == 404);

  CHECK(router_metric(http, "radixkv_router_decisions_total{outcome=\"prefix_hit\"}") == 4);
  CHECK(router_metric(http, "radixkv_router_bad_requests_total") == 1);
  CHECK(router_metric(http, "radixkv_router_worker_up{worker=\"w1\"}") == 1);
  std::set<uint64_t> blocks;  // each counted once, whatever its mediums
  for (const auto& [medium, hash] : w0.cache.truth()) blocks.insert(hash);
  CHECK(router_metric(http, "radixkv_router_index_pages{worker=\"w0\"}") ==
        static_cast<double>(blocks.size()));
  CHECK(router_metric(
            http, "radixkv_router_events_applied_total{worker=\"w0\",type=\"BlockStored\"}") > 0);
  CHECK(router_metric(http, "radixkv_router_replay_requests_total{worker=\"w1\"}") >= 1);
  const nlohmann::json health = nlohmann::json::parse(http.Get("/healthz")->body);
  CHECK(health["status"] == "ok");
  CHECK(health["workers"][0]["state"] == "up");
  service.stop();
  CHECK_FALSE(http.Get("/healthz"));  // the server is gone
}

// Predicted against delivered (POST /observe): the answer's route_id and predicted hit, the
// engine's report of what it reused, the sums per worker and the gap's histogram in /metrics,
// and every refusal as a 4xx counted by reason, never a crash.
TEST_CASE("router: the service in-process: POST /observe, the gap per worker, refusals counted") {
  Worker w0(3, events::EventEncoding::kMap);
  const std::vector<TokenId> held = w0.cache.pin_prefix(0, 5, 5000);  // 5 pages of 4 tokens
  for (int step = 0; step < 20; ++step) w0.cache.step();
  RouterOptions options;
  options.workers = {w0.endpoints("w0"), {"w1", "tcp://127.0.0.1:1", "tcp://127.0.0.1:2"}};
  options.http_port = 0;
  options.worker_timeout = 2s;
  options.max_pending_routes = 3;
  RouterService service(options);
  service.start();
  httplib::Client http("127.0.0.1", service.port());
  http.set_read_timeout(5, 0);
  CHECK(eventually([&] { return router_index(http, "w0") == w0.cache.truth(); }));

  const auto observe = [&](const nlohmann::json& body, int expect) {
    const auto res = http.Post("/observe", body.dump(), "application/json");
    REQUIRE(res);
    CHECK_MESSAGE(res->status == expect, res->body);
    return nlohmann::json::parse(res->body);
  };
  std::vector<TokenId> request = held;
  request.insert(request.end(), {1, 2});  // 22 tokens: the 5 pages held are all reusable
  const nlohmann::json first = route(http, {{"tokens", request}, {"page_size", 4}});
  REQUIRE(first["worker"] == "w0");
  CHECK(first["predicted_hit_tokens"] == 20);
  // The whole prompt held: an engine computes its last page, so 16 are predicted.
  const nlohmann::json whole = route(http, {{"tokens", held}, {"page_size", 4}});
  CHECK(whole["predicted_hit_tokens"] == 16);
  const nlohmann::json other =
      route(http, {{"tokens", request}, {"page_size", 4}, {"candidates", {{{"worker", "w1"}}}}});
  CHECK(other["predicted_hit_tokens"] == 0);

  nlohmann::json seen =
      observe({{"route_id", first["route_id"]}, {"hit_tokens", 20}, {"worker", "w0"}}, 200);
  CHECK(seen["predicted_hit_tokens"] == 20);
  CHECK(seen["worker"] == "w0");
  observe({{"route_id", whole["route_id"]}, {"hit_tokens", 8}}, 200);   // 8 over-predicted
  observe({{"route_id", other["route_id"]}, {"hit_tokens", 12}}, 200);  // 12 under-predicted
  CHECK(router_metric(http, "radixkv_router_observations_total{worker=\"w0\"}") == 2);
  CHECK(router_metric(http, "radixkv_router_predicted_overlap_tokens_total{worker=\"w0\"}") == 36);
  CHECK(router_metric(http, "radixkv_router_delivered_overlap_tokens_total{worker=\"w0\"}") == 28);
  CHECK(router_metric(http, "radixkv_router_overlap_overpredicted_tokens_total{worker=\"w0\"}") ==
        8);
  CHECK(router_metric(http, "radixkv_router_overlap_underpredicted_tokens_total{worker=\"w1\"}") ==
        12);
  CHECK(router_metric(http, "radixkv_router_overlap_mispredicted_total{worker=\"w0\"}") == 1);
  CHECK(router_metric(http, "radixkv_router_overlap_gap_tokens_bucket{le=\"0\"}") == 1);
  CHECK(router_metric(http, "radixkv_router_overlap_gap_tokens_bucket{le=\"16\"}") == 3);
  CHECK(router_metric(http, "radixkv_router_overlap_gap_tokens_sum") == 20);
  CHECK(router_metric(http, "radixkv_router_overlap_gap_tokens_count") == 3);

  // Refusals: each a 4xx naming why, counted by reason.
  CHECK(observe({{"route_id", first["route_id"]}, {"hit_tokens", 20}}, 409)["error"] ==
        fmt::format("route_id: {} observed already", first["route_id"].get<std::string>()));
  observe({{"route_id", "0123456789abcdef-1"}, {"hit_tokens", 0}}, 404);
  observe({{"route_id", "junk"}, {"hit_tokens", 0}}, 404);
  observe({{"route_id", first["route_id"]}, {"hit_tokens", -3}}, 400);
  const auto raw = http.Post("/observe", "{\"route_id\": ", "application/json");
  REQUIRE(raw);
  CHECK(raw->status == 400);
  const nlohmann::json fresh = route(http, {{"tokens", request}, {"page_size", 4}});
  observe({{"route_id", fresh["route_id"]}, {"hit_tokens", 4}, {"worker", "w1"}}, 409);
  observe({{"route_id", fresh["route_id"]}, {"hit_tokens", 23}}, 400);  // past its 22 tokens
  for (int i = 0; i < 3; ++i) route(http, {{"tokens", request}, {"page_size", 4}});
  observe({{"route_id", fresh["route_id"]}, {"hit_tokens", 4}}, 410);  // 3 routes kept: forgotten
  CHECK(http.Get("/observe")->status == 405);
  CHECK(router_metric(http, "radixkv_router_observations_refused_total{reason=\"duplicate\"}") ==
        1);
  CHECK(router_metric(http, "radixkv_router_observations_refused_total{reason=\"unknown\"}") == 2);
  CHECK(router_metric(http, "radixkv_router_observations_refused_total{reason=\"malformed\"}") ==
        2);
  CHECK(router_metric(http, "radixkv_router_observations_refused_total{reason=\"wrong_worker\"}") ==
        1);
  CHECK(router_metric(http, "radixkv_router_observations_refused_total{reason=\"too_large\"}") ==
        1);
  CHECK(router_metric(http, "radixkv_router_observations_refused_total{reason=\"expired\"}") == 1);
  CHECK(router_metric(http, "radixkv_router_observations_total{worker=\"w0\"}") == 2);
  service.stop();
}

TEST_CASE("the Grafana dashboard's router panels query only what the router exports") {
  RouterOptions options;
  options.workers = {{"w0", "tcp://127.0.0.1:1", "tcp://127.0.0.1:2"}};
  options.http_port = 0;
  RouterService service(options);
  std::set<std::string> exported;  // every sample's name, a histogram's _bucket/_sum/_count too
  std::istringstream lines(service.metrics());
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] != '#') exported.insert(line.substr(0, line.find_first_of("{ ")));
  }
  const nlohmann::json dashboard = nlohmann::json::parse(
      std::ifstream(std::string(RADIXKV_TESTS_DIR) + "/../docs/grafana-dashboard.json"));
  const std::regex name("radixkv_router_[a-z_]+");
  std::size_t queried = 0;
  for (const auto& panel : dashboard.at("panels")) {
    for (const auto& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name);
           it != std::sregex_iterator(); ++it) {
        CAPTURE(expr);
        CHECK_MESSAGE(exported.contains(it->str()), it->str() << " is not exported");
        ++queried;
      }
    }
  }
  CHECK(queried >= 8);
}
