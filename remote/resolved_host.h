// ResolvedHost: a Redis host's numeric address, looked up within a deadline and kept.
//
// hiredis' redisConnectWithTimeout resolves a host name with a blocking getaddrinfo that its
// timeout does not cover: a dead DNS server would stall the caller (the scheduler) for the
// resolver's own timeouts, seconds each. So the stores look the name up here, on a thread of its
// own, wait for it only until the call's deadline, and connect to the numeric address. At most
// one lookup per host is in flight: a call that gives up on it leaves it running, and the next
// call waits on that same lookup rather than starting another. After a failure the store calls
// forget(), and the name is looked up again on its next connection (after its backoff).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "remote/redis_connection.h"

namespace radixkv::remote {

// What a lookup found: a numeric address, or why there is none.
struct HostLookup {
  std::string address;
  std::string error;
};
// getaddrinfo, preferring an IPv4 address as hiredis does (a server bound to 127.0.0.1 only is
// then reached as "localhost").
HostLookup look_up_host(const std::string& host);

class ResolvedHost {
 public:
  using LookUp = std::function<HostLookup(const std::string& host)>;
  explicit ResolvedHost(std::string host, LookUp look_up = look_up_host);

  // The numeric address; a numeric host is its own. Throws RemoteError "cannot resolve HOST:
  // why" when the lookup fails or has not answered by `deadline`.
  const std::string& address(Deadline deadline);
  void forget() { address_.clear(); }
  const std::string& host() const { return host_; }

 private:
  struct Pending;  // one lookup in flight, shared with its thread

  std::string host_;
  LookUp look_up_;
  std::string address_;  // empty until found
  std::shared_ptr<Pending> pending_;
};

}  // namespace radixkv::remote
