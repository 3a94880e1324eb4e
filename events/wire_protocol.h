// The ZeroMQ protocol of vLLM's KV event publisher (ZmqEventPublisher in
// vllm/distributed/kv_events.py), which events/zmq_publisher.h serves and router/ consumes.
//
//   PUB socket      every batch as one multipart message (topic, seq, payload): topic as given
//                   (vLLM's default ""), seq an unsigned 8-byte big-endian counter from 0, payload
//                   the msgpack batch (events/event_codec.h).
//   ROUTER socket   (replay) a client sends (empty frame, start_seq 8 bytes big-endian), which the
//                   ROUTER sees as (identity, "", start_seq); it gets back, in seq order, one
//                   (seq, payload) message per buffered batch with seq >= start_seq, then the end
//                   marker (-1 as 8-byte signed big-endian, ""). With a DEALER socket the client
//                   receives ("", seq, payload) and ("", end marker, ""); the replay buffer keeps
//                   the last N batches (vLLM: buffer_steps, default 10,000).
//   endpoints       the PUB socket binds when the endpoint holds "*" or "::" or is ipc:// or
//                   inproc://, and connects otherwise (vLLM's rule: bind the stable side); the
//                   ROUTER socket always binds. "tcp://127.0.0.1:*" binds a free port.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace radixkv::events {

inline constexpr int64_t kEndOfReplay = -1;
inline constexpr size_t kSeqBytes = 8;

// seq as 8 bytes big-endian (two's complement for kEndOfReplay).
std::string encode_seq(int64_t seq);
// The 8-byte big-endian value of `frame` as a signed integer; nullopt unless it is 8 bytes long.
std::optional<int64_t> decode_seq(std::string_view frame);
// vLLM's rule for the PUB socket: bind (true) or connect (false).
bool pub_endpoint_binds(std::string_view endpoint);

}  // namespace radixkv::events
