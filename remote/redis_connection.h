// RedisConnection: one connection to one Redis server over hiredis' synchronous API (Debian's
// libhiredis-dev 0.14): connect with a timeout, AUTH and SELECT, then pipelines of commands
// whose replies must all arrive before a deadline. Any failure throws RemoteError and leaves the
// connection broken() (its state is unknown: the caller drops it and connects again).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "remote/redis_url.h"
#include "remote/remote_store.h"

struct redisContext;

namespace radixkv::remote {

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

class RedisConnection {
 public:
  // Connects (within `timeout`), logs in and selects the database. Throws RemoteError naming the
  // endpoint and the reason (never the password).
  RedisConnection(const RedisEndpoint& endpoint, const RedisLogin& login,
                  std::chrono::milliseconds timeout);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends every command in one write and reads one reply per command, all within `timeout` of
  // the call. An error reply is returned, not thrown; a transport failure or the deadline throws
  // RemoteError and the connection is broken().
  std::vector<RedisReply> pipeline(const std::vector<RedisCommand>& commands);
  bool broken() const { return broken_; }
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  [[noreturn]] void fail(const std::string& what);

  struct ContextFree {
    void operator()(redisContext* context) const;
  };

  RedisEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
  // Freed also when the constructor throws (a refused connection or login).
  std::unique_ptr<redisContext, ContextFree> context_;
  bool broken_ = false;
};

}  // namespace radixkv::remote
