// RedisConnection: one connection to one Redis server over hiredis' synchronous API (Debian's
// libhiredis-dev 0.14): connect, AUTH and SELECT before a deadline, then pipelines of commands
// whose replies must all arrive before a deadline. Any failure throws RemoteError and leaves the
// connection broken() (its state is unknown: the caller drops it and connects again).
//
// run_pipelines() runs pipelines on several connections as one round trip: every connection's
// commands are written first, then the replies are read as they arrive (poll), all before one
// deadline, so a batch over N servers costs the slowest server's round trip, not the sum, and a
// server that does not answer costs the deadline once, not once per server. One connection failing
// does not fail the others. Connecting is not part of it: a new connection is made, within the
// same deadline, before its pipeline is sent (one that hangs in connect holds up the batch). Sends
// are written one connection after another, each until written: lookups (small commands) fit the
// socket buffers at once, but a large put (the writer thread's batch) to a server that stops
// reading can use up the deadline before the next server's pipeline goes out.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "remote/redis_url.h"
#include "remote/remote_store.h"

struct redisContext;

namespace radixkv::remote {

using Deadline = std::chrono::steady_clock::time_point;

// A reply, copied out of hiredis' reply object.
struct RedisReply {
  enum class Type : uint8_t { kString, kArray, kInteger, kNil, kStatus, kError };
  Type type = Type::kNil;
  std::string str;  // kString, kStatus, kError
  long long integer = 0;
  std::vector<RedisReply> elements;  // kArray
  bool is_error() const { return type == Type::kError; }
};

using RedisCommand = std::vector<std::string>;  // arguments, binary-safe

struct RedisLogin {
  std::string user;                     // empty: AUTH password (the default user)
  std::optional<std::string> password;  // none: no AUTH
  uint32_t db = 0;                      // SELECT when not 0
};

class RedisConnection;

// One connection's part of a run_pipelines() call: its commands in, their replies (one per
// command) or the reason it failed out.
struct Pipeline {
  RedisConnection* connection = nullptr;
  std::vector<RedisCommand> commands;
  std::vector<RedisReply> replies;  // all of them, when error is empty
  std::string error;                // why it failed (the connection is broken() then)
};

// Sends every pipeline's commands, then reads the replies as they come, until all are in or
// `deadline` passes (replies already received by then are still taken). An error reply is a
// reply; a transport failure or the deadline fails that pipeline only.
void run_pipelines(std::span<Pipeline> pipelines, Deadline deadline);

class RedisConnection {
 public:
  // Connects to `address` (numeric: remote/resolved_host.h), logs in and selects the database,
  // all before `deadline`. Throws RemoteError naming the endpoint and the reason (never the
  // password).
  RedisConnection(const RedisEndpoint& endpoint, const std::string& address,
                  const RedisLogin& login, Deadline deadline);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // run_pipelines() of this connection alone; throws RemoteError on a transport failure or the
  // deadline.
  std::vector<RedisReply> pipeline(const std::vector<RedisCommand>& commands, Deadline deadline);
  bool broken() const { return broken_; }
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  friend void run_pipelines(std::span<Pipeline> pipelines, Deadline deadline);
  // The steps of run_pipelines(); each throws RemoteError (and breaks the connection) on failure.
  void send(const std::vector<RedisCommand>& commands, Deadline deadline);
  // Moves the replies already read into `into`, up to `want` in all; true when it has them all.
  bool take_replies(std::vector<RedisReply>& into, std::size_t want);
  void read_available();  // reads what the socket holds (call when poll says it is readable)
  int fd() const;
  [[noreturn]] void fail(const std::string& what);

  struct ContextFree {
    void operator()(redisContext* context) const;
  };

  RedisEndpoint endpoint_;
  // Freed also when the constructor throws (a refused connection or login).
  std::unique_ptr<redisContext, ContextFree> context_;
  bool broken_ = false;
};

}  // namespace radixkv::remote
