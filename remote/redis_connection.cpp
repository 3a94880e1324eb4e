#include "remote/redis_connection.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>

namespace radixkv::remote {

namespace {

using Clock = std::chrono::steady_clock;

timeval to_timeval(std::chrono::microseconds t) {
  t = std::max(t, std::chrono::microseconds(1000));  // a zero timeval would mean "no timeout"
  return {static_cast<time_t>(t.count() / 1000000), static_cast<suseconds_t>(t.count() % 1000000)};
}

RedisReply copy_reply(const redisReply& r) {
  RedisReply out;
  switch (r.type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.type = r.type == REDIS_REPLY_STRING   ? RedisReply::Type::kString
                 : r.type == REDIS_REPLY_STATUS ? RedisReply::Type::kStatus
                                                : RedisReply::Type::kError;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r.integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i)
        out.elements.push_back(copy_reply(*r.element[i]));
      break;
    default:
      out.type = RedisReply::Type::kNil;
  }
  return out;
}

}  // namespace

RedisConnection::RedisConnection(const RedisEndpoint& endpoint, const RedisLogin& login,
                                 std::chrono::milliseconds timeout)
    : endpoint_(endpoint), timeout_(timeout) {
  context_.reset(
      redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, to_timeval(timeout)));
  if (context_ == nullptr) fail("out of memory allocating the connection");
  if (context_->err != 0) fail(fmt::format("cannot connect: {}", context_->errstr));
  std::vector<RedisCommand> hello;
  if (login.password) {
    hello.push_back(login.user.empty() ? RedisCommand{"AUTH", *login.password}
                                       : RedisCommand{"AUTH", login.user, *login.password});
  }
  if (login.db != 0) hello.push_back({"SELECT", std::to_string(login.db)});
  if (hello.empty()) return;
  const std::vector<RedisReply> replies = pipeline(hello);
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i].is_error()) continue;
    // The server's words (WRONGPASS..., NOAUTH..., ERR DB index...) hold no password.
    fail(fmt::format("{} refused: {}", hello[i][0], replies[i].str));
  }
}

void RedisConnection::ContextFree::operator()(redisContext* context) const { redisFree(context); }

RedisConnection::~RedisConnection() = default;

void RedisConnection::fail(const std::string& what) {
  broken_ = true;
  throw RemoteError(fmt::format("redis {}: {}", endpoint_.to_string(), what));
}

std::vector<RedisReply> RedisConnection::pipeline(const std::vector<RedisCommand>& commands) {
  if (broken_) fail("the connection broke earlier");
  const Clock::time_point deadline = Clock::now() + timeout_;
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const RedisCommand& command : commands) {
    argv.clear();
    lengths.clear();
    for (const std::string& arg : command) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      fail("out of memory queueing a command");
    }
  }
  std::vector<RedisReply> replies;
  replies.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    // Each blocking read may take only what is left of the call's time.
    const auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
    if (left.count() <= 0 || redisSetTimeout(context_.get(), to_timeval(left)) != REDIS_OK) {
      fail(fmt::format("no reply within {} ms", timeout_.count()));
    }
    void* raw = nullptr;
    if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) {
      const bool timed_out =
          context_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
      fail(timed_out ? fmt::format("no reply within {} ms", timeout_.count())
                     : fmt::format("lost the connection: {}", context_->errstr));
    }
    auto* reply = static_cast<redisReply*>(raw);
    replies.push_back(copy_reply(*reply));
    freeReplyObject(reply);
  }
  return replies;
}

}  // namespace radixkv::remote
