#include "events/zmq_publisher.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "events/batch_queue.h"
#include "events/endpoint.h"
#include "events/wire_protocol.h"

namespace radixkv::events {

namespace {

std::string last_endpoint(zmq::socket_t& socket) { return socket.get(zmq::sockopt::last_endpoint); }

// The eventfd the publishing thread writes to wake the publisher thread's poll.
class WakeFd {
 public:
  WakeFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  ~WakeFd() { ::close(fd_); }
  WakeFd(const WakeFd&) = delete;
  WakeFd& operator=(const WakeFd&) = delete;

  int fd() const { return fd_; }
  void wake() {
    const uint64_t one = 1;
    // A full counter (2^64 - 2 wakes pending) cannot happen; EAGAIN would still leave it readable.
    [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof(one));
  }
  void drain() {
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t n = ::read(fd_, &count, sizeof(count));
  }

 private:
  int fd_;
};

}  // namespace

struct ZmqEventPublisher::State {
  explicit State(PublisherOptions opts) : options(std::move(opts)), queue(options.queue_batches) {}

  void run();
  void send_queued();
  void serve_replay();

  PublisherOptions options;
  zmq::context_t context;
  zmq::socket_t pub;
  zmq::socket_t replay;  // not open without a replay endpoint
  std::string bound_pub, bound_replay;
  BatchQueue queue;
  WakeFd wake;
  std::thread thread;
  std::atomic<bool> closing{false};
  bool closed = false;

  std::atomic<uint64_t> published{0}, replay_requests{0}, replayed{0}, bad_requests{0};
  std::deque<std::pair<uint64_t, std::string>> buffer;  // (seq, payload), publisher thread only
};

ZmqEventPublisher::ZmqEventPublisher(PublisherOptions options)
    : state_(std::make_unique<State>(std::move(options))) {
  State& s = *state_;
  if (s.options.replay_batches == 0) {
    throw std::invalid_argument("KV events replay buffer must hold at least 1 batch");
  }
  if (s.options.pub_hwm < 0) throw std::invalid_argument("KV events PUB high-water mark < 0");
  // Before any socket: a connecting socket would take a bad host and retry it forever, silently.
  check_endpoints(
      {s.options.endpoint},
      pub_endpoint_binds(s.options.endpoint) ? EndpointUse::kBind : EndpointUse::kConnect,
      "KV events endpoint");
  if (!s.options.replay_endpoint.empty()) {
    check_endpoints({s.options.replay_endpoint}, EndpointUse::kBind, "KV events replay endpoint");
  }
  try {
    s.pub = zmq::socket_t(s.context, zmq::socket_type::pub);
    s.pub.set(zmq::sockopt::sndhwm, s.options.pub_hwm);
    // Closing waits up to a second for the last batches to leave; replay covers the rest.
    s.pub.set(zmq::sockopt::linger, 1000);
    if (pub_endpoint_binds(s.options.endpoint)) {
      s.pub.bind(s.options.endpoint);
      s.bound_pub = last_endpoint(s.pub);
    } else {
      s.pub.connect(s.options.endpoint);
      s.bound_pub = s.options.endpoint;
    }
  } catch (const zmq::error_t& e) {
    throw std::invalid_argument("KV events endpoint " + s.options.endpoint + ": " + e.what());
  }
  if (!s.options.replay_endpoint.empty()) {
    try {
      s.replay = zmq::socket_t(s.context, zmq::socket_type::router);
      // A ROUTER drops what a client's full pipe cannot take: room for a few whole replays each.
      s.replay.set(zmq::sockopt::sndhwm,
                   static_cast<int>(std::min<size_t>(4 * (s.options.replay_batches + 1), 1 << 30)));
      s.replay.set(zmq::sockopt::linger, 0);
      s.replay.bind(s.options.replay_endpoint);
      s.bound_replay = last_endpoint(s.replay);
    } catch (const zmq::error_t& e) {
      throw std::invalid_argument("KV events replay endpoint " + s.options.replay_endpoint + ": " +
                                  e.what());
    }
  }
  // The sockets move to the publisher thread; starting it orders everything above before it.
  s.thread = std::thread([&s] { s.run(); });
}

ZmqEventPublisher::~ZmqEventPublisher() { close(); }

bool ZmqEventPublisher::publish(EventBatch batch) {
  State& s = *state_;
  if (s.closing.load()) throw std::logic_error("ZmqEventPublisher::publish after close()");
  const bool queued = s.queue.push(std::move(batch));
  if (queued) s.wake.wake();
  return queued;
}

void ZmqEventPublisher::close() {
  State& s = *state_;
  if (s.closed) return;
  s.closing.store(true);
  s.wake.wake();
  s.thread.join();
  s.pub.close();
  if (s.replay) s.replay.close();
  s.closed = true;
}

const std::string& ZmqEventPublisher::bound_endpoint() const { return state_->bound_pub; }
const std::string& ZmqEventPublisher::bound_replay_endpoint() const { return state_->bound_replay; }

PublisherStats ZmqEventPublisher::stats() const {
  const State& s = *state_;
  return {s.published.load(), s.queue.dropped(), s.replay_requests.load(), s.replayed.load(),
          s.bad_requests.load()};
}

void ZmqEventPublisher::State::run() {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> linger_until;
  std::vector<zmq::pollitem_t> items = {{nullptr, wake.fd(), ZMQ_POLLIN, 0}};
  if (replay) items.push_back({replay.handle(), 0, ZMQ_POLLIN, 0});
  while (true) {
    auto timeout = std::chrono::milliseconds(-1);
    if (linger_until) {
      const auto left = *linger_until - Clock::now();
      if (left <= Clock::duration::zero()) break;
      timeout = std::chrono::ceil<std::chrono::milliseconds>(left);
    }
    try {
      zmq::poll(items, timeout);
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      continue;
    }
    if (items[0].revents & ZMQ_POLLIN) wake.drain();
    send_queued();
    if (replay && (items[1].revents & ZMQ_POLLIN)) serve_replay();
    if (closing.load() && !linger_until) {
      send_queued();  // batches queued just before close()
      linger_until = Clock::now() + options.linger;
    }
  }
}

void ZmqEventPublisher::State::send_queued() {
  const zmq::const_buffer topic = zmq::buffer(options.topic);
  for (SequencedBatch& queued : queue.take_all()) {
    std::string payload = encode_batch(queued.batch, options.encoding);
    const std::string seq = encode_seq(static_cast<int64_t>(queued.seq));
    const std::array<zmq::const_buffer, 3> message = {topic, zmq::buffer(seq),
                                                      zmq::buffer(payload)};
    // A PUB socket never blocks: a subscriber past its high-water mark misses the batch and
    // fetches it through replay.
    zmq::send_multipart(pub, message, zmq::send_flags::dontwait);
    published.fetch_add(1);
    buffer.emplace_back(queued.seq, std::move(payload));
    if (buffer.size() > options.replay_batches) buffer.pop_front();
  }
}

void ZmqEventPublisher::State::serve_replay() {
  while (true) {
    std::vector<zmq::message_t> request;
    if (!zmq::recv_multipart(replay, std::back_inserter(request), zmq::recv_flags::dontwait)) {
      return;
    }
    const std::optional<int64_t> start =
        request.size() == 3 ? decode_seq(request[2].to_string_view()) : std::nullopt;
    if (!start) {
      bad_requests.fetch_add(1);
      continue;
    }
    replay_requests.fetch_add(1);
    const zmq::const_buffer identity = zmq::buffer(request[0].data(), request[0].size());
    const auto first = std::lower_bound(buffer.begin(), buffer.end(), static_cast<uint64_t>(*start),
                                        [](const std::pair<uint64_t, std::string>& entry,
                                           uint64_t seq) { return entry.first < seq; });
    for (auto it = first; it != buffer.end(); ++it) {
      const std::string seq = encode_seq(static_cast<int64_t>(it->first));
      const std::array<zmq::const_buffer, 4> message = {identity, zmq::const_buffer(),
                                                        zmq::buffer(seq), zmq::buffer(it->second)};
      zmq::send_multipart(replay, message, zmq::send_flags::dontwait);
      replayed.fetch_add(1);
    }
    const std::string end = encode_seq(kEndOfReplay);
    const std::array<zmq::const_buffer, 4> message = {identity, zmq::const_buffer(),
                                                      zmq::buffer(end), zmq::const_buffer()};
    zmq::send_multipart(replay, message, zmq::send_flags::dontwait);
  }
}

}  // namespace radixkv::events
