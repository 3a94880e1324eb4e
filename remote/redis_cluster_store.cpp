#include "remote/redis_cluster_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

namespace radixkv::remote {

namespace {

constexpr int kMaxRounds = 5;  // a first try and up to four redirections

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection; the variant the
// Redis Cluster specification names.
uint16_t crc16_xmodem(std::string_view data) {
  uint16_t crc = 0;
  for (unsigned char byte : data) {
    crc ^= static_cast<uint16_t>(byte) << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

// "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381": the slot and the node.
struct Redirect {
  bool ask = false;
  uint16_t slot = 0;
  RedisEndpoint endpoint;
};

std::optional<Redirect> parse_redirect(const RedisReply& reply, const RedisEndpoint& from) {
  if (!reply.is_error()) return std::nullopt;
  Redirect r;
  std::string_view text = reply.str;
  if (text.starts_with("MOVED ")) {
    text.remove_prefix(6);
  } else if (text.starts_with("ASK ")) {
    r.ask = true;
    text.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const std::size_t space = text.find(' ');
  const std::size_t colon = text.rfind(':');
  if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) {
    throw RemoteError(fmt::format("redis {}: a redirection that does not parse: {}",
                                  from.to_string(), reply.str));
  }
  unsigned slot = 0, port = 0;
  std::from_chars(text.data(), text.data() + space, slot);
  std::from_chars(text.data() + colon + 1, text.data() + text.size(), port);
  r.slot = static_cast<uint16_t>(slot % kClusterSlots);
  r.endpoint.host = std::string(text.substr(space + 1, colon - space - 1));
  if (r.endpoint.host.empty()) r.endpoint.host = from.host;  // "MOVED 1 :6380": the same host
  r.endpoint.port = static_cast<uint16_t>(port);
  return r;
}

}  // namespace

uint16_t cluster_slot(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16_xmodem(key) % kClusterSlots;
}

RedisClusterStore::RedisClusterStore(RedisUrl url, RedisStoreOptions options)
    : url_(std::move(url)),
      options_(options),
      backoff_(options.first_backoff, options.most_backoff) {
  slot_node_.fill(-1);
  for (const RedisEndpoint& seed : url_.endpoints) node_index(seed);
}

uint16_t RedisClusterStore::node_index(const RedisEndpoint& endpoint) {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].endpoint == endpoint) return static_cast<uint16_t>(i);
  }
  nodes_.push_back({endpoint, ResolvedHost(endpoint.host, options_.look_up),
                    Backoff(options_.first_backoff, options_.most_backoff), nullptr});
  return static_cast<uint16_t>(nodes_.size() - 1);
}

void RedisClusterStore::node_failed(Node& node) {
  node.connection.reset();
  node.host.forget();
  node.backoff.failed();
  have_slots_ = false;  // the node may have failed over: ask the others for the map next time
}

RedisConnection* RedisClusterStore::connect(Node& node, Deadline deadline, std::string& error) {
  if (node.connection && !node.connection->broken()) return node.connection.get();
  node.connection.reset();
  if (!node.backoff.ready()) {
    error = fmt::format("redis {}: waiting to reconnect", node.endpoint.to_string());
    return nullptr;
  }
  try {
    node.connection =
        std::make_unique<RedisConnection>(node.endpoint, node.host.address(deadline),
                                          RedisLogin{url_.user, url_.password, 0}, deadline);
    return node.connection.get();
  } catch (const RemoteError& e) {
    error = e.what();
    node_failed(node);
    return nullptr;
  }
}

void RedisClusterStore::refresh_slots(Deadline deadline) {
  std::string last_error = "no node to ask";
  // Nodes that answered last time first: one that just timed out would cost the whole deadline.
  std::vector<std::size_t> order(nodes_.size());
  for (std::size_t n = 0; n < order.size(); ++n) order[n] = n;
  std::stable_partition(order.begin(), order.end(),
                        [&](std::size_t n) { return !nodes_[n].backoff.failing(); });
  for (std::size_t n : order) {
    Node& node = nodes_[n];
    const RedisEndpoint asked = node.endpoint;
    RedisConnection* connection = connect(node, deadline, last_error);
    if (connection == nullptr) continue;
    Pipeline ask{connection, {{"CLUSTER", "SLOTS"}}, {}, {}};
    run_pipelines({&ask, 1}, deadline);
    if (!ask.error.empty()) {
      last_error = ask.error;
      node_failed(nodes_[n]);
      continue;
    }
    const RedisReply& slots = ask.replies.front();
    if (slots.type != RedisReply::Type::kArray || slots.elements.empty()) {
      last_error = fmt::format("redis {}: CLUSTER SLOTS answered {}", asked.to_string(),
                               slots.is_error() ? slots.str : "no slot");
      continue;
    }
    slot_node_.fill(-1);
    for (const RedisReply& range : slots.elements) {
      // [start, end, [host, port, id...], replicas...]: the master comes first.
      if (range.elements.size() < 3 || range.elements[2].elements.size() < 2) continue;
      const RedisReply& master = range.elements[2];
      RedisEndpoint endpoint{master.elements[0].str,
                             static_cast<uint16_t>(master.elements[1].integer)};
      if (endpoint.host.empty()) endpoint.host = asked.host;
      const int16_t index = static_cast<int16_t>(node_index(endpoint));  // may grow nodes_
      for (long long s = range.elements[0].integer; s <= range.elements[1].integer; ++s) {
        if (s >= 0 && s < kClusterSlots) slot_node_[s] = index;
      }
    }
    have_slots_ = true;
    return;
  }
  throw RemoteError(
      fmt::format("redis cluster {}: cannot read the slot map: {}", url_.describe(), last_error));
}

RedisClusterStore::Batch RedisClusterStore::run(
    std::size_t count, const std::function<std::string_view(std::size_t)>& key,
    const std::function<RedisCommand(std::size_t)>& command) {
  Batch batch;
  if (count == 0) return batch;
  const Deadline deadline = std::chrono::steady_clock::now() + options_.timeout;
  if (!have_slots_) {
    if (!backoff_.ready()) {
      throw RemoteUnavailable(fmt::format("{}: waiting to reconnect", url_.describe()));
    }
    try {
      refresh_slots(deadline);
      backoff_.succeeded();
    } catch (const RemoteError&) {
      backoff_.failed();
      throw;
    }
  }
  batch.replies.resize(count);
  batch.errors.resize(count);
  std::size_t unavailable = 0;  // keys failed without trying: their master waits out its backoff
  const auto fail_key = [&](std::size_t i, const std::string& why) {
    batch.errors[i] = why;
    if (batch.failed++ == 0) batch.first_error = why;
  };
  std::vector<std::optional<RedisEndpoint>> ask(count);
  std::vector<std::size_t> pending(count);
  for (std::size_t i = 0; i < count; ++i) pending[i] = i;
  for (int round = 0; round < kMaxRounds && !pending.empty(); ++round) {
    std::map<uint16_t, std::vector<std::size_t>> by_node;
    for (std::size_t i : pending) {
      const uint16_t slot = cluster_slot(key(i));
      const int node = ask[i] ? node_index(*ask[i]) : slot_node_[slot];
      if (node < 0) {
        have_slots_ = false;
        fail_key(i, fmt::format("redis cluster {}: no node serves slot {}", url_.describe(), slot));
        continue;
      }
      by_node[static_cast<uint16_t>(node)].push_back(i);
    }
    // Every master's pipeline goes out before any reply is read.
    std::vector<Pipeline> pipelines;
    std::vector<uint16_t> pipeline_node;
    for (const auto& [node, items] : by_node) {
      std::string why;
      const bool waiting = !nodes_[node].backoff.ready();
      RedisConnection* connection = connect(nodes_[node], deadline, why);
      if (connection == nullptr) {
        for (std::size_t i : items) fail_key(i, why);
        if (waiting) unavailable += items.size();
        continue;
      }
      Pipeline& p = pipelines.emplace_back(Pipeline{connection, {}, {}, {}});
      pipeline_node.push_back(node);
      for (std::size_t i : items) {
        if (ask[i]) p.commands.push_back({"ASKING"});
        p.commands.push_back(command(i));
      }
    }
    run_pipelines(pipelines, deadline);
    std::vector<std::size_t> next;
    for (std::size_t n = 0; n < pipelines.size(); ++n) {
      // By index: following a redirection may add a node (and move nodes_).
      const uint16_t node = pipeline_node[n];
      const RedisEndpoint from = nodes_[node].endpoint;
      const std::vector<std::size_t>& items = by_node[node];
      if (!pipelines[n].error.empty()) {
        node_failed(nodes_[node]);
        for (std::size_t i : items) fail_key(i, pipelines[n].error);
        continue;
      }
      nodes_[node].backoff.succeeded();
      std::size_t r = 0;
      for (std::size_t i : items) {
        if (ask[i]) ++r;  // ASKING's +OK
        RedisReply& reply = pipelines[n].replies[r++];
        if (const std::optional<Redirect> redirect = parse_redirect(reply, from)) {
          ++redirects_;
          ask[i].reset();
          if (redirect->ask) {
            ask[i] = redirect->endpoint;
          } else {
            slot_node_[redirect->slot] = static_cast<int16_t>(node_index(redirect->endpoint));
          }
          next.push_back(i);
          continue;
        }
        ask[i].reset();
        batch.replies[i] = std::move(reply);
      }
    }
    pending = std::move(next);
  }
  for (std::size_t i : pending) {
    fail_key(i, fmt::format("redis cluster {}: still redirected after {} tries", url_.describe(),
                            kMaxRounds));
  }
  if (batch.failed == count) {
    if (unavailable == count) throw RemoteUnavailable(batch.first_error);
    throw RemoteError(batch.first_error);
  }
  return batch;
}

template <class Result>
std::vector<Result> RedisClusterStore::read(std::span<const std::string> keys, const char* verb,
                                            Result (*meaning)(const RedisReply&)) {
  Batch batch = run(
      keys.size(), [&](std::size_t i) { return std::string_view(keys[i]); },
      [&](std::size_t i) {
        return RedisCommand{verb, keys[i]};
      });
  std::vector<Result> results;
  results.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    results.push_back(batch.errors[i].empty() ? meaning(batch.replies[i]) : Result{});
  }
  if (batch.failed > 0) {
    throw RemotePartialError<Result>(
        fmt::format("{} of {} keys failed: {}", batch.failed, keys.size(), batch.first_error),
        std::move(results), batch.failed);
  }
  return results;
}

std::vector<bool> RedisClusterStore::exists(std::span<const std::string> keys) {
  return read<bool>(keys, "EXISTS", exists_reply);
}

std::vector<std::optional<std::string>> RedisClusterStore::get(std::span<const std::string> keys) {
  return read<std::optional<std::string>>(keys, "GET", get_reply);
}

PutResult RedisClusterStore::put(std::span<const std::pair<std::string, std::string>> items) {
  Batch batch = run(
      items.size(), [&](std::size_t i) { return std::string_view(items[i].first); },
      [&](std::size_t i) {
        return RedisCommand{"SET", items[i].first, items[i].second};
      });
  PutResult result;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (batch.errors[i].empty()) {
      add_put_reply(batch.replies[i], result);
    } else if (result.refused++ == 0) {
      result.first_error = batch.errors[i];
    }
  }
  return result;
}

}  // namespace radixkv::remote
