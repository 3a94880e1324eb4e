#include "remote/redis_store.h"

#include <fmt/format.h>

#include "remote/redis_cluster_store.h"

namespace radixkv::remote {

bool exists_reply(const RedisReply& reply) {
  if (reply.is_error()) throw RemoteError(fmt::format("EXISTS failed: {}", reply.str));
  return reply.type == RedisReply::Type::kInteger && reply.integer > 0;
}

std::optional<std::string> get_reply(const RedisReply& reply) {
  if (reply.is_error()) throw RemoteError(fmt::format("GET failed: {}", reply.str));
  if (reply.type != RedisReply::Type::kString) return std::nullopt;
  return reply.str;
}

void add_put_reply(const RedisReply& reply, PutResult& result) {
  if (!reply.is_error()) {
    ++result.stored;
    return;
  }
  if (result.refused++ == 0) result.first_error = reply.str;
}

RedisStore::RedisStore(RedisUrl url, RedisStoreOptions options)
    : url_(std::move(url)),
      options_(options),
      backoff_(options.first_backoff, options.most_backoff),
      host_(url_.endpoints.front().host, options.look_up) {}

std::vector<RedisReply> RedisStore::run(const std::vector<RedisCommand>& commands) {
  if (commands.empty()) return {};
  // Connecting (when needed) and the round trip share one deadline.
  const Deadline deadline = std::chrono::steady_clock::now() + options_.timeout;
  if (!connection_ || connection_->broken()) {
    connection_.reset();
    if (!backoff_.ready()) {
      throw RemoteUnavailable(fmt::format("{}: waiting to reconnect", url_.describe()));
    }
    try {
      connection_ = std::make_unique<RedisConnection>(
          url_.endpoints.front(), host_.address(deadline),
          RedisLogin{url_.user, url_.password, url_.db}, deadline);
    } catch (const RemoteError&) {
      host_.forget();  // the name may point elsewhere now
      backoff_.failed();
      throw;
    }
  }
  try {
    std::vector<RedisReply> replies = connection_->pipeline(commands, deadline);
    backoff_.succeeded();
    return replies;
  } catch (const RemoteError&) {
    connection_.reset();
    host_.forget();
    backoff_.failed();
    throw;
  }
}

std::vector<bool> RedisStore::exists(std::span<const std::string> keys) {
  std::vector<RedisCommand> commands;
  for (const std::string& key : keys) commands.push_back({"EXISTS", key});
  std::vector<bool> found;
  for (const RedisReply& reply : run(commands)) found.push_back(exists_reply(reply));
  return found;
}

std::vector<std::optional<std::string>> RedisStore::get(std::span<const std::string> keys) {
  std::vector<RedisCommand> commands;
  for (const std::string& key : keys) commands.push_back({"GET", key});
  std::vector<std::optional<std::string>> values;
  for (const RedisReply& reply : run(commands)) values.push_back(get_reply(reply));
  return values;
}

PutResult RedisStore::put(std::span<const std::pair<std::string, std::string>> items) {
  std::vector<RedisCommand> commands;
  for (const auto& [key, value] : items) commands.push_back({"SET", key, value});
  PutResult result;
  for (const RedisReply& reply : run(commands)) add_put_reply(reply, result);
  return result;
}

std::unique_ptr<RemoteStore> make_redis_store(const RedisUrl& url, RedisStoreOptions options) {
  if (url.cluster) return std::make_unique<RedisClusterStore>(url, options);
  return std::make_unique<RedisStore>(url, options);
}

}  // namespace radixkv::remote
