// Test-side ZeroMQ clients of vLLM's KV event protocol (events/wire_protocol.h): receive with a
// deadline, and fetch a replay. Independent of the router's EventFeed, which these tests check.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "events/wire_protocol.h"

namespace radixkv::testing {

// The frames of the next message on `socket`, or nullopt after `timeout`.
inline std::optional<std::vector<std::string>> receive(zmq::socket_t& socket,
                                                       std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0) return std::nullopt;
  std::vector<zmq::message_t> frames;
  (void)zmq::recv_multipart(socket, std::back_inserter(frames));
  std::vector<std::string> out;
  for (const zmq::message_t& f : frames) out.push_back(f.to_string());
  return out;
}

struct Replayed {
  std::vector<std::pair<int64_t, std::string>> batches;  // (seq, payload)
  bool ended = false;                                    // the end marker came
};

// Sends (empty, start) on a DEALER connected to `endpoint` and collects the answer until the end
// marker or `timeout` without a message.
inline Replayed fetch_replay(zmq::context_t& context, const std::string& endpoint, int64_t start,
                             std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint);
  const std::string start_bytes = events::encode_seq(start);
  const std::array<zmq::const_buffer, 2> request = {zmq::const_buffer(), zmq::buffer(start_bytes)};
  zmq::send_multipart(dealer, request);
  Replayed out;
  while (auto frames = receive(dealer, timeout)) {
    if (frames->size() != 3 || !(*frames)[0].empty()) break;
    const std::optional<int64_t> seq = events::decode_seq((*frames)[1]);
    if (!seq) break;
    if (*seq == events::kEndOfReplay) {
      out.ended = (*frames)[2].empty();
      break;
    }
    out.batches.emplace_back(*seq, (*frames)[2]);
  }
  return out;
}

}  // namespace radixkv::testing
