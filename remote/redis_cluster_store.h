// RedisClusterStore: RemoteStore on a Redis Cluster. Each key goes to the master that serves its
// hash slot; a batch is split into one pipeline per master.
//
// Routing, as the Redis Cluster specification describes it (https://redis.io/docs/reference/
// cluster-spec/): slot = CRC16-XMODEM(key) mod 16384, where a key holding "{tag}" with a non-empty
// tag hashes only the tag. The slot map comes from CLUSTER SLOTS, asked of any reachable node
// (the URL's seeds first; nodes that failed last go last). A reply "MOVED slot host:port" (the slot
// moved for good) updates the map and the command is sent again there; "ASK slot host:port" (a slot
// being migrated) sends it once to that node after ASKING, without changing the map. A key is
// redirected a few times at most, and then fails (as below).
//
// A batch is one round trip: every master's pipeline is sent before any reply is read, and the
// whole batch (slot map, connections, redirections included) ends by one deadline, the store's
// timeout after the call. A master that fails (unreachable, or no reply by the deadline) fails
// only its own keys (RemotePartialError, or refused items for put) and waits out a backoff of its
// own, its keys failing at once meanwhile; the slot map is asked for again (of the other nodes) on
// the next call, in case the cluster has failed it over. Only when every key fails does the call
// throw RemoteError (RemoteUnavailable when every key's master is waiting out its backoff).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "remote/backoff.h"
#include "remote/redis_connection.h"
#include "remote/redis_store.h"
#include "remote/resolved_host.h"

namespace radixkv::remote {

inline constexpr uint32_t kClusterSlots = 16384;
// The slot of `key` (hash tags included). Pinned against Redis' own answers in the tests.
uint16_t cluster_slot(std::string_view key);

class RedisClusterStore final : public RemoteStore {
 public:
  RedisClusterStore(RedisUrl url, RedisStoreOptions options);  // connects lazily
  std::vector<bool> exists(std::span<const std::string> keys) override;
  std::vector<std::optional<std::string>> get(std::span<const std::string> keys) override;
  PutResult put(std::span<const std::pair<std::string, std::string>> items) override;
  std::string describe() const override { return url_.describe(); }

  uint64_t redirects() const { return redirects_; }  // MOVED and ASK replies followed

 private:
  struct Node {
    RedisEndpoint endpoint;
    ResolvedHost host;
    Backoff backoff;
    std::unique_ptr<RedisConnection> connection;
  };
  // What run() gives: one reply per key, in key order, or why that key failed.
  struct Batch {
    std::vector<RedisReply> replies;
    std::vector<std::string> errors;  // empty: replies[i] is the key's reply
    std::size_t failed = 0;
    std::string first_error;
  };
  // One command per key, routed. Throws RemoteError when every key failed.
  Batch run(std::size_t count, const std::function<std::string_view(std::size_t)>& key,
            const std::function<RedisCommand(std::size_t)>& command);
  // get() and exists(): `meaning` of each reply; RemotePartialError when some keys failed.
  template <class Result>
  std::vector<Result> read(std::span<const std::string> keys, const char* verb,
                           Result (*meaning)(const RedisReply&));
  void refresh_slots(Deadline deadline);
  uint16_t node_index(const RedisEndpoint& endpoint);
  // The node's connection, made by `deadline`; nullptr (and the node failed) when it cannot be.
  RedisConnection* connect(Node& node, Deadline deadline, std::string& error);
  void node_failed(Node& node);

  RedisUrl url_;
  RedisStoreOptions options_;
  Backoff backoff_;  // reading the slot map
  std::vector<Node> nodes_;
  std::array<int16_t, kClusterSlots> slot_node_;  // index into nodes_, -1 while unknown
  bool have_slots_ = false;
  uint64_t redirects_ = 0;
};

}  // namespace radixkv::remote
