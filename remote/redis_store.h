// RedisStore: RemoteStore on one Redis server (GET / SET / EXISTS, pipelined), and the factory
// that picks it or RedisClusterStore (remote/redis_cluster_store.h) from a URL.
//
// Values are written with plain SET and no expiry: the server's maxmemory and eviction policy
// (allkeys-lru is the natural one for a cache) decide what stays. A server at maxmemory with
// noeviction refuses the SET (counted in PutResult), which is the "full" case.
#pragma once

#include <chrono>
#include <memory>

#include "remote/backoff.h"
#include "remote/redis_connection.h"
#include "remote/redis_url.h"
#include "remote/remote_store.h"
#include "remote/resolved_host.h"

namespace radixkv::remote {

struct RedisStoreOptions {
  std::chrono::milliseconds timeout{50};        // each call, name lookup and connecting included
  std::chrono::milliseconds first_backoff{50};  // after a failure, doubling up to most_backoff
  std::chrono::milliseconds most_backoff{2000};
  ResolvedHost::LookUp look_up = look_up_host;  // how host names are looked up (tests stand in)
};

class RedisStore final : public RemoteStore {
 public:
  // Connects lazily, on the first call.
  RedisStore(RedisUrl url, RedisStoreOptions options);
  std::vector<bool> exists(std::span<const std::string> keys) override;
  std::vector<std::optional<std::string>> get(std::span<const std::string> keys) override;
  PutResult put(std::span<const std::pair<std::string, std::string>> items) override;
  std::string describe() const override { return url_.describe(); }

 private:
  std::vector<RedisReply> run(const std::vector<RedisCommand>& commands);

  RedisUrl url_;
  RedisStoreOptions options_;
  Backoff backoff_;
  ResolvedHost host_;
  std::unique_ptr<RedisConnection> connection_;
};

// A RedisStore, or a RedisClusterStore for redis+cluster://. Throws std::invalid_argument for a
// URL that does not parse; connects lazily.
std::unique_ptr<RemoteStore> make_redis_store(const RedisUrl& url, RedisStoreOptions options);

// What one reply means, for both stores. The first two throw RemoteError on an error reply.
bool exists_reply(const RedisReply& reply);
std::optional<std::string> get_reply(const RedisReply& reply);
void add_put_reply(const RedisReply& reply, PutResult& result);

}  // namespace radixkv::remote
