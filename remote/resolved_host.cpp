#include "remote/resolved_host.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

namespace radixkv::remote {

namespace {

bool is_numeric(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

}  // namespace

HostLookup look_up_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) return {{}, rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc)};
  const addrinfo* pick = found;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  }
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw =
      pick->ai_family == AF_INET
          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(pick->ai_addr)->sin_addr)
          : static_cast<const void*>(
                &reinterpret_cast<const sockaddr_in6*>(pick->ai_addr)->sin6_addr);
  HostLookup result;
  if (::inet_ntop(pick->ai_family, raw, text, sizeof text) == nullptr) {
    result.error = std::strerror(errno);
  } else {
    result.address = text;
  }
  ::freeaddrinfo(found);
  return result;
}

struct ResolvedHost::Pending {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  HostLookup result;
};

ResolvedHost::ResolvedHost(std::string host, LookUp look_up)
    : host_(std::move(host)), look_up_(std::move(look_up)) {}

const std::string& ResolvedHost::address(Deadline deadline) {
  if (!address_.empty()) return address_;
  if (is_numeric(host_)) return address_ = host_;
  const auto budget =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (!pending_) {
    auto pending = std::make_shared<Pending>();
    try {
      // Detached: a lookup the caller gave up on finishes (or hangs) on its own, holding only
      // its share of `pending`.
      std::thread([pending, host = host_, look_up = look_up_] {
        HostLookup result;
        try {
          result = look_up(host);
        } catch (const std::exception& e) {  // out of memory, in practice
          result.error = e.what();
        }
        const std::lock_guard lock(pending->mutex);
        pending->result = std::move(result);
        pending->done = true;
        pending->finished.notify_all();
      }).detach();
    } catch (const std::system_error& e) {
      throw RemoteError(
          fmt::format("cannot resolve {}: cannot start the lookup: {}", host_, e.what()));
    }
    pending_ = std::move(pending);
  }
  HostLookup result;
  {
    std::unique_lock lock(pending_->mutex);
    if (!pending_->finished.wait_until(lock, deadline, [&] { return pending_->done; })) {
      throw RemoteError(
          fmt::format("cannot resolve {}: no answer within {} ms", host_, budget.count()));
    }
    result = std::move(pending_->result);
  }
  pending_.reset();
  if (result.address.empty()) {
    throw RemoteError(fmt::format("cannot resolve {}: {}", host_, result.error));
  }
  return address_ = std::move(result.address);
}

}  // namespace radixkv::remote
