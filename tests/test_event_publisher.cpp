// The ZeroMQ publisher against vLLM's protocol, in-process: the PUB frames, seq from 0, replay
// from any start with the end marker, the bounded buffer, linger after close, the queue that
// drops instead of blocking, and errors that name the endpoint.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "events/batch_queue.h"
#include "events/zmq_publisher.h"
#include "tests/zmq_test_client.h"

using namespace radixkv::events;
using radixkv::testing::fetch_replay;
using radixkv::testing::receive;
using namespace std::chrono_literals;

namespace {

EventBatch numbered(uint64_t n) { return {static_cast<double>(n), {BlockRemoved{{n}, "GPU"}}, 0}; }

PublisherOptions loopback(size_t replay_batches = 10'000) {
  PublisherOptions o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.replay_endpoint = "tcp://127.0.0.1:*";
  o.topic = "kv";
  o.replay_batches = replay_batches;
  return o;
}

// Replays from 0 until `count` batches are buffered (the publisher thread sends them
// asynchronously); what the last fetch returned.
radixkv::testing::Replayed wait_buffered(zmq::context_t& context, const std::string& endpoint,
                                         size_t count) {
  radixkv::testing::Replayed got;
  for (int attempt = 0; attempt < 500; ++attempt) {
    got = fetch_replay(context, endpoint, 0);
    if (got.batches.size() >= count) break;
    std::this_thread::sleep_for(10ms);
  }
  return got;
}

}  // namespace

TEST_CASE("events: the batch queue drops instead of blocking, and the drop spends a seq") {
  BatchQueue queue(2);
  CHECK(queue.push(numbered(0)));
  CHECK(queue.push(numbered(1)));
  CHECK_FALSE(queue.push(numbered(2)));  // full: dropped, seq 2 spent
  CHECK(queue.dropped() == 1);
  std::vector<SequencedBatch> taken = queue.take_all();
  REQUIRE(taken.size() == 2);
  CHECK(taken[0].seq == 0);
  CHECK(taken[1].seq == 1);
  CHECK(taken[1].batch == numbered(1));
  CHECK(queue.push(numbered(3)));
  taken = queue.take_all();
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].seq == 3);  // the gap at 2 tells a subscriber a batch is gone
  CHECK(queue.take_all().empty());
  CHECK(queue.next_seq() == 4);
  CHECK_THROWS_WITH_AS(BatchQueue(0), "event queue capacity must be at least 1 batch",
                       std::invalid_argument);
}

TEST_CASE("events: the publisher sends (topic, seq, payload) with seq counting from 0") {
  for (EventEncoding encoding : {EventEncoding::kMap, EventEncoding::kArray}) {
    PublisherOptions options = loopback();
    options.encoding = encoding;
    ZmqEventPublisher publisher(options);
    zmq::context_t context;
    zmq::socket_t sub(context, zmq::socket_type::sub);
    sub.set(zmq::sockopt::subscribe, "kv");
    sub.connect(publisher.bound_endpoint());
    // A SUB socket misses what is sent before its subscription arrives: publish until one
    // arrives, then every later batch must follow in order.
    std::optional<std::vector<std::string>> first;
    uint64_t sent = 0;
    while (!first && sent < 2000) {
      publisher.publish(numbered(sent++));
      first = receive(sub, 5ms);
    }
    REQUIRE(first);
    REQUIRE(first->size() == 3);
    CHECK((*first)[0] == "kv");
    int64_t seq = *decode_seq((*first)[1]);
    CHECK(decode_batch((*first)[2]) == numbered(static_cast<uint64_t>(seq)));
    for (uint64_t n = 0; n < 20; ++n) publisher.publish(numbered(sent++));
    while (seq + 1 < static_cast<int64_t>(sent)) {
      const auto frames = receive(sub, 5s);
      REQUIRE(frames);
      REQUIRE(decode_seq((*frames)[1]) == seq + 1);
      seq = *decode_seq((*frames)[1]);
      CHECK(decode_batch((*frames)[2]) == numbered(static_cast<uint64_t>(seq)));
      // The payload is in the encoding asked for: a map or an array at the top.
      CHECK(static_cast<unsigned char>((*frames)[2][0]) ==
            (encoding == EventEncoding::kMap ? 0x83 : 0x93));
    }
    publisher.close();
    CHECK(publisher.stats().published == sent);
    CHECK(publisher.stats().dropped == 0);
  }
}

TEST_CASE("events: replay sends every buffered batch from the start asked, then the end marker") {
  ZmqEventPublisher publisher(loopback(10));
  for (uint64_t n = 0; n < 30; ++n) REQUIRE(publisher.publish(numbered(n)));
  zmq::context_t context;
  const auto all = wait_buffered(context, publisher.bound_replay_endpoint(), 10);
  REQUIRE(all.ended);
  REQUIRE(all.batches.size() == 10);  // the buffer keeps the last 10
  for (size_t i = 0; i < all.batches.size(); ++i) {
    CHECK(all.batches[i].first == static_cast<int64_t>(20 + i));
    CHECK(decode_batch(all.batches[i].second) == numbered(20 + i));
  }
  const auto tail = fetch_replay(context, publisher.bound_replay_endpoint(), 25);
  CHECK(tail.ended);
  REQUIRE(tail.batches.size() == 5);
  CHECK(tail.batches.front().first == 25);
  const auto none = fetch_replay(context, publisher.bound_replay_endpoint(), 100);
  CHECK(none.ended);
  CHECK(none.batches.empty());

  // A malformed request gets no answer and is counted; the socket keeps serving.
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(publisher.bound_replay_endpoint());
  const std::array<zmq::const_buffer, 2> bad = {zmq::const_buffer(), zmq::str_buffer("seven")};
  zmq::send_multipart(dealer, bad);
  CHECK_FALSE(receive(dealer, 300ms));
  CHECK(fetch_replay(context, publisher.bound_replay_endpoint(), 29).batches.size() == 1);
  const PublisherStats stats = publisher.stats();
  CHECK(stats.bad_requests == 1);
  CHECK(stats.replay_requests >= 4);
}

TEST_CASE("events: after close the replay socket answers for the linger time, then goes") {
  PublisherOptions options = loopback();
  options.linger = 400ms;
  ZmqEventPublisher publisher(options);
  for (uint64_t n = 0; n < 5; ++n) publisher.publish(numbered(n));
  const std::string replay = publisher.bound_replay_endpoint();
  const auto started = std::chrono::steady_clock::now();
  std::thread closing([&] { publisher.close(); });
  zmq::context_t context;
  const auto during = fetch_replay(context, replay, 0, 2s);
  closing.join();
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(during.ended);
  CHECK(during.batches.size() == 5);  // everything queued before close() went out, and is served
  CHECK(took >= 400ms);
  CHECK_FALSE(fetch_replay(context, replay, 0, 300ms).ended);  // gone
  CHECK_THROWS_WITH_AS(publisher.publish(numbered(9)), "ZmqEventPublisher::publish after close()",
                       std::logic_error);
  CHECK(publisher.stats().published == 5);
}

TEST_CASE("events: a publisher that cannot open its sockets names the endpoint") {
  PublisherOptions bad = loopback();
  bad.endpoint = "bogus://nowhere";
  CHECK_THROWS_WITH_AS(
      ZmqEventPublisher{bad},
      doctest::Contains(
          "KV events endpoint: endpoint 'bogus://nowhere': unknown transport 'bogus'"),
      std::invalid_argument);
  ZmqEventPublisher first(loopback());
  PublisherOptions taken = loopback();
  taken.replay_endpoint = first.bound_replay_endpoint();
  CHECK_THROWS_WITH_AS(
      ZmqEventPublisher{taken},
      doctest::Contains(("KV events replay endpoint " + taken.replay_endpoint).c_str()),
      std::invalid_argument);
  PublisherOptions no_buffer = loopback(0);
  CHECK_THROWS_WITH_AS(ZmqEventPublisher{no_buffer},
                       "KV events replay buffer must hold at least 1 batch", std::invalid_argument);
}

TEST_CASE("events: a full queue drops batches and counts them, never blocking the caller") {
  PublisherOptions options = loopback(100'000);
  options.queue_batches = 1;
  ZmqEventPublisher publisher(options);
  uint64_t accepted = 0;
  const uint64_t total = 20'000;
  for (uint64_t n = 0; n < total; ++n) accepted += publisher.publish(numbered(n));
  publisher.close();
  const PublisherStats stats = publisher.stats();
  CHECK(stats.published == accepted);
  CHECK(stats.published + stats.dropped == total);
}
