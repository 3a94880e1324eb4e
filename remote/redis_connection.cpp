#include "remote/redis_connection.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace radixkv::remote {

namespace {

using Clock = std::chrono::steady_clock;

timeval to_timeval(std::chrono::microseconds t) {
  t = std::max(t, std::chrono::microseconds(1000));  // a zero timeval would mean "no timeout"
  return {static_cast<time_t>(t.count() / 1000000), static_cast<suseconds_t>(t.count() % 1000000)};
}

std::chrono::microseconds time_left(Deadline deadline) {
  return std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
}

// hiredis 0.14 writes with write(), which raises SIGPIPE when the server has reset the connection
// (it went away mid-write), and SIGPIPE's default action ends the process. While one is alive,
// SIGPIPE is blocked on this thread (write() directs it at the writing thread), and one raised
// meanwhile is taken back before the old mask returns; the write fails with EPIPE instead, a
// RemoteError. (Linux has no per-socket SO_NOSIGPIPE, and hiredis does not pass MSG_NOSIGNAL.)
class SigpipeHeld {
 public:
  SigpipeHeld() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    already_pending_ = sigismember(&pending, SIGPIPE) == 1;  // not ours to take
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeHeld() {
    sigset_t pending;
    sigpending(&pending);
    if (!already_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec now{};
      while (sigtimedwait(&pipe_, nullptr, &now) == -1 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeHeld(const SigpipeHeld&) = delete;
  SigpipeHeld& operator=(const SigpipeHeld&) = delete;

 private:
  sigset_t pipe_{}, old_{};
  bool already_pending_ = false;
};

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

RedisConnection::RedisConnection(const RedisEndpoint& endpoint, const std::string& address,
                                 const RedisLogin& login, Deadline deadline)
    : endpoint_(endpoint) {
  context_.reset(
      redisConnectWithTimeout(address.c_str(), endpoint.port, to_timeval(time_left(deadline))));
  if (context_ == nullptr) fail("out of memory allocating the connection");
  if (context_->err != 0) fail(fmt::format("cannot connect: {}", context_->errstr));
  std::vector<RedisCommand> hello;
  if (login.password) {
    hello.push_back(login.user.empty() ? RedisCommand{"AUTH", *login.password}
                                       : RedisCommand{"AUTH", login.user, *login.password});
  }
  if (login.db != 0) hello.push_back({"SELECT", std::to_string(login.db)});
  if (hello.empty()) return;
  const std::vector<RedisReply> replies = pipeline(hello, deadline);
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

int RedisConnection::fd() const { return context_->fd; }

std::vector<RedisReply> RedisConnection::pipeline(const std::vector<RedisCommand>& commands,
                                                  Deadline deadline) {
  Pipeline one{this, commands, {}, {}};
  run_pipelines({&one, 1}, deadline);
  if (!one.error.empty()) throw RemoteError(one.error);
  return std::move(one.replies);
}

void RedisConnection::send(const std::vector<RedisCommand>& commands, Deadline deadline) {
  if (broken_) fail("the connection broke earlier");
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
  // A blocking write, bounded by the socket's send timeout: small pipelines fit the socket
  // buffer at once; a large one to a server that stops reading waits at most until the deadline.
  const SigpipeHeld no_sigpipe;
  for (int done = 0; done == 0;) {
    const auto left = time_left(deadline);
    if (left.count() <= 0 || redisSetTimeout(context_.get(), to_timeval(left)) != REDIS_OK ||
        redisBufferWrite(context_.get(), &done) != REDIS_OK) {
      fail(fmt::format("cannot send: {}", context_->err != 0 ? context_->errstr : "timed out"));
    }
  }
}

bool RedisConnection::take_replies(std::vector<RedisReply>& into, std::size_t want) {
  while (into.size() < want) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(context_.get(), &raw) != REDIS_OK) {
      fail(fmt::format("a reply that does not parse: {}", context_->errstr));
    }
    if (raw == nullptr) return false;  // needs more bytes
    auto* reply = static_cast<redisReply*>(raw);
    into.push_back(copy_reply(*reply));
    freeReplyObject(reply);
  }
  return true;
}

void RedisConnection::read_available() {
  if (redisBufferRead(context_.get()) != REDIS_OK) {
    fail(fmt::format("lost the connection: {}", context_->errstr));
  }
}

void run_pipelines(std::span<Pipeline> pipelines, Deadline deadline) {
  const auto budget = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  std::vector<Pipeline*> waiting;
  for (Pipeline& p : pipelines) {
    p.replies.clear();
    p.error.clear();
    try {
      p.connection->send(p.commands, deadline);
      waiting.push_back(&p);
    } catch (const RemoteError& e) {
      p.error = e.what();
    }
  }
  std::vector<pollfd> fds;
  while (true) {
    std::erase_if(waiting, [](Pipeline* p) {
      try {
        return p->connection->take_replies(p->replies, p->commands.size());
      } catch (const RemoteError& e) {
        p->error = e.what();
        return true;
      }
    });
    if (waiting.empty()) return;
    fds.clear();
    for (Pipeline* p : waiting) fds.push_back({p->connection->fd(), POLLIN, 0});
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(time_left(deadline));
    const int ready =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, left.count())));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {  // the deadline, with nothing more arrived (or poll itself failed)
      const std::string why = ready == 0 ? fmt::format("no reply within {} ms", budget)
                                         : fmt::format("poll: {}", std::strerror(errno));
      for (Pipeline* p : waiting) {
        try {
          p->connection->fail(why);
        } catch (const RemoteError& e) {
          p->error = e.what();
        }
      }
      return;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      try {
        waiting[i]->connection->read_available();
      } catch (const RemoteError& e) {
        waiting[i]->error = e.what();
      }
    }
    std::erase_if(waiting, [](Pipeline* p) { return !p->error.empty(); });
  }
}

}  // namespace radixkv::remote
