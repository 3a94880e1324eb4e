#include "router/event_feed.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <stdexcept>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "events/event_codec.h"
#include "events/wire_protocol.h"

namespace radixkv::router {

namespace {

using Clock = std::chrono::steady_clock;

// How often the feed thread looks at its timers (and at the stop flag) when nothing arrives.
constexpr std::chrono::milliseconds kTick{20};
// Messages taken from one socket before the thread moves on. A worker answering a replay of a
// million batches must not keep the thread from the stop flag, the other workers and the timers.
constexpr size_t kDrainLimit = 1024;

}  // namespace

std::string_view to_string(WorkerState state) {
  switch (state) {
    case WorkerState::kConnecting:
      return "connecting";
    case WorkerState::kUp:
      return "up";
    case WorkerState::kDown:
      return "down";
  }
  return "?";
}

struct EventFeed::Impl {
  // One worker's stream. Only the feed thread touches the sockets and the sequencing; the
  // counters are atomics that status() reads from other threads.
  struct Worker {
    size_t index = 0;  // in workers, and for the sink
    WorkerEndpoints endpoints;
    zmq::socket_t sub, dealer;
    uint64_t next_seq = 0;
    struct Held {
      std::string payload;
      uint64_t requests_before;  // replay requests sent when it came
    };
    std::map<uint64_t, Held> held;  // PUB batches past next_seq, waiting for the gap
    size_t held_bytes = 0;
    uint64_t requests_sent = 0;
    bool replay_outstanding = false;
    Clock::time_point replay_sent;   // the last request
    Clock::time_point replay_heard;  // the last message on the replay socket
    Clock::time_point last_heard;    // the last message on either socket

    std::atomic<WorkerState> state{WorkerState::kConnecting};
    std::atomic<uint64_t> published_next{0}, batches{0}, replay_requests{0}, gaps{0},
        decode_errors{0}, times_down{0}, discarded{0};
  };

  Impl(FeedOptions opts, FeedSink s) : options(std::move(opts)), sink(std::move(s)) {}

  void open_dealer(Worker& w);
  void request_replay(Worker& w, uint64_t from);
  void on_pub(Worker& w, std::vector<zmq::message_t>& frames);
  void on_replay(Worker& w, std::vector<zmq::message_t>& frames);
  void deliver(Worker& w, uint64_t seq, std::string_view payload);
  void skip_gap(Worker& w, uint64_t to);
  void settle(Worker& w);
  void check_timers(Worker& w, Clock::time_point now);
  void lost(Worker& w, const std::string& why) { sink.lost(w.index, why); }
  void run();

  FeedOptions options;
  FeedSink sink;
  zmq::context_t context;
  std::vector<std::unique_ptr<Worker>> workers;
  std::thread thread;
  std::atomic<bool> stopping{false};
};

EventFeed::EventFeed(std::vector<WorkerEndpoints> workers, FeedOptions options, FeedSink sink)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(sink))) {
  if (!impl_->sink.batch || !impl_->sink.lost) throw std::invalid_argument("EventFeed: no sink");
  if (impl_->options.timeout <= std::chrono::milliseconds::zero() ||
      impl_->options.probe_after <= std::chrono::milliseconds::zero()) {
    throw std::invalid_argument("EventFeed: the worker timeout and probe interval must be > 0");
  }
  for (WorkerEndpoints& endpoints : workers) {
    auto w = std::make_unique<Impl::Worker>();
    w->index = impl_->workers.size();
    w->endpoints = std::move(endpoints);
    const WorkerEndpoints& e = w->endpoints;
    try {
      w->sub = zmq::socket_t(impl_->context, zmq::socket_type::sub);
      w->sub.set(zmq::sockopt::rcvhwm, 100'000);
      w->sub.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(impl_->options.max_batch_bytes));
      w->sub.set(zmq::sockopt::linger, 0);
      w->sub.set(zmq::sockopt::subscribe, impl_->options.topic);
      w->sub.connect(e.pub);
    } catch (const zmq::error_t& err) {
      throw std::invalid_argument("worker " + e.name + ": event endpoint " + e.pub + ": " +
                                  err.what());
    }
    try {
      impl_->open_dealer(*w);
    } catch (const zmq::error_t& err) {
      throw std::invalid_argument("worker " + e.name + ": replay endpoint " + e.replay + ": " +
                                  err.what());
    }
    impl_->workers.push_back(std::move(w));
  }
}

EventFeed::~EventFeed() { stop(); }

void EventFeed::start() {
  if (impl_->thread.joinable()) return;
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

void EventFeed::stop() {
  impl_->stopping.store(true);
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::vector<WorkerFeedStatus> EventFeed::status() const {
  std::vector<WorkerFeedStatus> out;
  for (const auto& w : impl_->workers) {
    out.push_back({w->endpoints.name, w->state.load(), w->published_next.load(), w->batches.load(),
                   w->replay_requests.load(), w->gaps.load(), w->decode_errors.load(),
                   w->times_down.load(), w->discarded.load()});
  }
  return out;
}

void EventFeed::Impl::open_dealer(Worker& w) {
  w.dealer = zmq::socket_t(context, zmq::socket_type::dealer);
  // A whole replay must fit (vLLM buffers 10,000 batches); past this, a gap shows what was lost.
  w.dealer.set(zmq::sockopt::rcvhwm, 100'000);
  w.dealer.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(options.max_batch_bytes));
  w.dealer.set(zmq::sockopt::linger, 0);
  w.dealer.connect(w.endpoints.replay);
}

void EventFeed::Impl::request_replay(Worker& w, uint64_t from) {
  const std::string start = events::encode_seq(static_cast<int64_t>(from));
  const std::array<zmq::const_buffer, 2> request = {zmq::const_buffer(), zmq::buffer(start)};
  zmq::send_multipart(w.dealer, request, zmq::send_flags::dontwait);
  w.replay_outstanding = true;
  w.replay_sent = Clock::now();
  ++w.requests_sent;
  w.replay_requests.fetch_add(1);
}

void EventFeed::Impl::deliver(Worker& w, uint64_t seq, std::string_view payload) {
  w.next_seq = seq + 1;
  w.published_next.store(w.next_seq);
  events::EventBatch batch;
  try {
    batch = events::decode_batch(payload);
  } catch (const events::EventDecodeError& e) {
    w.decode_errors.fetch_add(1);
    lost(w, "batch " + std::to_string(seq) + " does not decode: " + e.what());
    return;
  }
  if (w.endpoints.data_parallel_rank && batch.data_parallel_rank &&
      batch.data_parallel_rank != w.endpoints.data_parallel_rank) {
    w.decode_errors.fetch_add(1);
    lost(w, "batch " + std::to_string(seq) + " is of data parallel rank " +
                std::to_string(*batch.data_parallel_rank) + ", not " +
                std::to_string(*w.endpoints.data_parallel_rank));
    return;
  }
  w.batches.fetch_add(1);
  try {
    sink.batch(w.index, batch);
  } catch (const std::invalid_argument& e) {  // the sink refused it (the index's limits)
    w.decode_errors.fetch_add(1);
    lost(w, "batch " + std::to_string(seq) + " was refused: " + e.what());
  }
}

// Batches [next_seq, to) are gone for good.
void EventFeed::Impl::skip_gap(Worker& w, uint64_t to) {
  w.gaps.fetch_add(1);
  lost(w, "batches " + std::to_string(w.next_seq) + " to " + std::to_string(to - 1) +
              " are no longer in the worker's replay buffer");
  w.next_seq = to;
  w.published_next.store(to);
}

// After a replay ended: apply the held PUB batches that follow in order. A hole before the next
// held one that came after the replay was asked for is a batch published after the replay's
// snapshot and missed on PUB (a subscription still on its way, say): ask again. One that came
// before cannot be: the worker had published it, and its replay would have had it. No such batch
// exists (a forged seq): it is discarded. Only a replay that skips a batch proves a batch gone.
void EventFeed::Impl::settle(Worker& w) {
  while (!w.held.empty()) {
    auto first = w.held.begin();
    if (first->first > w.next_seq) {
      if (first->second.requests_before < w.requests_sent) {
        w.discarded.fetch_add(1);
        w.held_bytes -= first->second.payload.size();
        w.held.erase(first);
        continue;
      }
      request_replay(w, w.next_seq);
      return;
    }
    if (first->first == w.next_seq) deliver(w, first->first, first->second.payload);
    w.held_bytes -= first->second.payload.size();
    w.held.erase(first);
  }
}

void EventFeed::Impl::on_pub(Worker& w, std::vector<zmq::message_t>& frames) {
  const std::optional<int64_t> seq =
      frames.size() == 3 ? events::decode_seq(frames[1].to_string_view()) : std::nullopt;
  if (!seq) {
    w.decode_errors.fetch_add(1);
    return;  // not a batch: nothing to apply, and the seq stream shows what is missing
  }
  const auto s = static_cast<uint64_t>(*seq);
  if (s < w.next_seq) return;  // already applied (through replay)
  if (w.replay_outstanding || s > w.next_seq) {
    if (w.held.size() >= kMaxHeldBatches || w.held_bytes + frames[2].size() > kMaxHeldBytes) {
      w.discarded.fetch_add(1);  // replay fetches it, if the worker has it
    } else if (w.held.emplace(s, Worker::Held{frames[2].to_string(), w.requests_sent}).second) {
      w.held_bytes += frames[2].size();
    }
    if (!w.replay_outstanding) request_replay(w, w.next_seq);
    return;
  }
  deliver(w, s, frames[2].to_string_view());
}

void EventFeed::Impl::on_replay(Worker& w, std::vector<zmq::message_t>& frames) {
  // A DEALER receives ("", seq, payload); the end marker is ("", -1, "").
  const std::optional<int64_t> seq =
      frames.size() == 3 ? events::decode_seq(frames[1].to_string_view()) : std::nullopt;
  if (!seq) {
    w.decode_errors.fetch_add(1);
    return;
  }
  if (*seq == events::kEndOfReplay) {
    w.replay_outstanding = false;
    settle(w);
    return;
  }
  // While a replay is outstanding nothing else is applied, so the answer starts at next_seq
  // unless the worker no longer has that batch.
  const auto s = static_cast<uint64_t>(*seq);
  if (s < w.next_seq) return;
  if (s > w.next_seq) skip_gap(w, s);
  deliver(w, s, frames[2].to_string_view());
}

void EventFeed::Impl::check_timers(Worker& w, Clock::time_point now) {
  if (w.replay_outstanding) {
    // A long replay keeps the worker alive as long as its batches keep coming.
    if (now - std::max(w.replay_sent, w.replay_heard) < options.timeout) return;
    // Silent past the timeout: forget what it held, and ask again from 0 until it answers.
    if (w.state.load() != WorkerState::kDown) {
      // Counted and cleared before it shows as down, so that whoever sees "down" sees the rest.
      w.times_down.fetch_add(1);
      lost(w, "silent for " + std::to_string(options.timeout.count()) + " ms");
      w.state.store(WorkerState::kDown);
    }
    w.next_seq = 0;
    w.published_next.store(0);
    w.held.clear();
    w.held_bytes = 0;
    open_dealer(w);  // drops requests still queued for the dead peer
    request_replay(w, 0);
  } else if (now - w.last_heard >= options.probe_after) {
    request_replay(w, w.next_seq);
  }
}

void EventFeed::Impl::run() {
  std::vector<zmq::pollitem_t> items;
  for (const auto& w : workers) {
    w->last_heard = Clock::now();
    request_replay(*w, 0);
  }
  while (!stopping.load()) {
    items.clear();
    for (const auto& w : workers) {
      items.push_back({w->sub.handle(), 0, ZMQ_POLLIN, 0});
      items.push_back({w->dealer.handle(), 0, ZMQ_POLLIN, 0});
    }
    try {
      zmq::poll(items, kTick);
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = *workers[i];
      for (int socket = 0; socket < 2; ++socket) {
        if (!(items[2 * i + socket].revents & ZMQ_POLLIN)) continue;
        zmq::socket_t& from = socket == 0 ? w.sub : w.dealer;
        std::vector<zmq::message_t> frames;
        for (size_t taken = 0;
             taken < kDrainLimit &&
             zmq::recv_multipart(from, std::back_inserter(frames), zmq::recv_flags::dontwait);
             ++taken) {
          // Stamped when taken, not when the pass began: silence is the worker's, never the
          // time this thread spent applying what the worker had already sent.
          const Clock::time_point taken_at = Clock::now();
          w.last_heard = taken_at;
          if (socket == 0) {
            on_pub(w, frames);
          } else {
            // Only an answer on the replay socket shows the worker serves us: it is up.
            w.replay_heard = taken_at;
            w.state.store(WorkerState::kUp);
            on_replay(w, frames);
          }
          frames.clear();
        }
      }
      check_timers(w, Clock::now());
    }
  }
}

}  // namespace radixkv::router
