#include "remote/redis_cluster_store.h"

#include <fmt/format.h>

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
  nodes_.push_back({endpoint, nullptr});
  return static_cast<uint16_t>(nodes_.size() - 1);
}

RedisConnection& RedisClusterStore::connect(Node& node) {
  if (!node.connection || node.connection->broken()) {
    node.connection.reset();
    node.connection = std::make_unique<RedisConnection>(
        node.endpoint, RedisLogin{url_.user, url_.password, 0}, options_.timeout);
  }
  return *node.connection;
}

void RedisClusterStore::refresh_slots() {
  std::string last_error = "no node to ask";
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const RedisEndpoint asked = nodes_[n].endpoint;
    std::vector<RedisReply> replies;
    try {
      replies = connect(nodes_[n]).pipeline({{"CLUSTER", "SLOTS"}});
    } catch (const RemoteError& e) {
      nodes_[n].connection.reset();
      last_error = e.what();
      continue;
    }
    const RedisReply& slots = replies.front();
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
      const int16_t node = static_cast<int16_t>(node_index(endpoint));
      for (long long s = range.elements[0].integer; s <= range.elements[1].integer; ++s) {
        if (s >= 0 && s < kClusterSlots) slot_node_[s] = node;
      }
    }
    have_slots_ = true;
    return;
  }
  throw RemoteError(
      fmt::format("redis cluster {}: cannot read the slot map: {}", url_.describe(), last_error));
}

std::vector<RedisReply> RedisClusterStore::run(
    std::size_t count, const std::function<std::string_view(std::size_t)>& key,
    const std::function<RedisCommand(std::size_t)>& command) {
  if (count == 0) return {};
  if (!backoff_.ready()) {
    throw RemoteUnavailable(fmt::format("{}: waiting to reconnect", url_.describe()));
  }
  try {
    if (!have_slots_) refresh_slots();
    std::vector<RedisReply> replies(count);
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
          throw RemoteError(
              fmt::format("redis cluster {}: no node serves slot {}", url_.describe(), slot));
        }
        by_node[static_cast<uint16_t>(node)].push_back(i);
      }
      std::vector<std::size_t> next;
      for (const auto& [node, items] : by_node) {
        std::vector<RedisCommand> commands;
        for (std::size_t i : items) {
          if (ask[i]) commands.push_back({"ASKING"});
          commands.push_back(command(i));
        }
        Node& target = nodes_[node];
        std::vector<RedisReply> got;
        try {
          got = connect(target).pipeline(commands);
        } catch (const RemoteError&) {
          target.connection.reset();
          have_slots_ = false;  // the node may have failed over: ask for the map again
          throw;
        }
        std::size_t r = 0;
        for (std::size_t i : items) {
          if (ask[i]) ++r;  // ASKING's +OK
          RedisReply& reply = got[r++];
          if (const std::optional<Redirect> redirect = parse_redirect(reply, target.endpoint)) {
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
          replies[i] = std::move(reply);
        }
      }
      pending = std::move(next);
    }
    if (!pending.empty()) {
      throw RemoteError(fmt::format("redis cluster {}: still redirected after {} tries",
                                    url_.describe(), kMaxRounds));
    }
    backoff_.succeeded();
    return replies;
  } catch (const RemoteError&) {
    backoff_.failed();
    throw;
  }
}

std::vector<bool> RedisClusterStore::exists(std::span<const std::string> keys) {
  std::vector<bool> found;
  for (const RedisReply& reply : run(
           keys.size(), [&](std::size_t i) { return std::string_view(keys[i]); },
           [&](std::size_t i) {
             return RedisCommand{"EXISTS", keys[i]};
           })) {
    found.push_back(exists_reply(reply));
  }
  return found;
}

std::vector<std::optional<std::string>> RedisClusterStore::get(std::span<const std::string> keys) {
  std::vector<std::optional<std::string>> values;
  for (const RedisReply& reply : run(
           keys.size(), [&](std::size_t i) { return std::string_view(keys[i]); },
           [&](std::size_t i) {
             return RedisCommand{"GET", keys[i]};
           })) {
    values.push_back(get_reply(reply));
  }
  return values;
}

PutResult RedisClusterStore::put(std::span<const std::pair<std::string, std::string>> items) {
  PutResult result;
  for (const RedisReply& reply : run(
           items.size(), [&](std::size_t i) { return std::string_view(items[i].first); },
           [&](std::size_t i) {
             return RedisCommand{"SET", items[i].first, items[i].second};
           })) {
    add_put_reply(reply, result);
  }
  return result;
}

}  // namespace radixkv::remote
