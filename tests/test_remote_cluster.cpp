// The remote tier on a real 3-node Redis Cluster (scripts/with-redis.sh --cluster starts one per
// case): key slots as the cluster computes them, batches split across the masters, MOVED and ASK
// redirections followed, and two processes sharing pages through the cluster.
#include <doctest/doctest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "remote/redis_cluster_store.h"
#include "tests/child_process.h"
#include "tests/cli_runs.h"
#include "tests/redis_fixture.h"
#include "tests/remote_replays.h"

namespace radixkv {
namespace {

using namespace std::chrono_literals;
constexpr auto npos = std::string::npos;

using testing::redis_cli;

std::unique_ptr<remote::RedisClusterStore> cluster_store() {
  return std::make_unique<remote::RedisClusterStore>(
      remote::RedisUrl::parse(testing::redis_url()),
      remote::RedisStoreOptions{std::chrono::milliseconds(500), std::chrono::milliseconds(5),
                                std::chrono::milliseconds(50)});
}

std::string node_id(int port) { return redis_cli(port, "cluster myid"); }

TEST_CASE("cluster: key slots equal CLUSTER KEYSLOT's") {
  RADIXKV_NEED_REDIS();
  const int port = testing::redis_ports().at(0);
  for (const std::string key :
       {"foo", "bar", "{user1000}.following", "radixkv:00:ab", "a{b}c", "x{}y", "{{z}}"}) {
    CAPTURE(key);
    CHECK(std::to_string(remote::cluster_slot(key)) ==
          redis_cli(port, "cluster keyslot '" + key + "'"));
  }
}

TEST_CASE("cluster: a batch is split across the masters and read back whole") {
  RADIXKV_NEED_REDIS();
  auto store = cluster_store();
  std::vector<std::pair<std::string, std::string>> items;
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) {
    items.emplace_back(fmt::format("page:{}", i), fmt::format("value {}", i * i));
    keys.push_back(items.back().first);
  }
  CHECK(store->put(items).stored == 300);
  const auto values = store->get(keys);
  for (int i = 0; i < 300; ++i) CHECK(values[i] == items[i].second);
  int total = 0;
  for (int port : testing::redis_ports()) {
    const int here = std::stoi(redis_cli(port, "dbsize"));
    CHECK(here > 50);  // every master holds its share
    total += here;
  }
  CHECK(total == 300);
  CHECK(store->redirects() == 0);
}

TEST_CASE("cluster: a batch is one round trip: two masters asleep cost one timeout, not two") {
  RADIXKV_NEED_REDIS();
  const std::vector<int> ports = testing::redis_ports();
  REQUIRE(ports.size() == 3);
  const auto timeout = 300ms;
  auto store = std::make_unique<remote::RedisClusterStore>(
      remote::RedisUrl::parse(testing::redis_url()),
      remote::RedisStoreOptions{timeout, std::chrono::milliseconds(5),
                                std::chrono::milliseconds(50)});
  std::vector<std::pair<std::string, std::string>> items;
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) {
    items.emplace_back(fmt::format("page:{}", i), fmt::format("value {}", i));
    keys.push_back(items.back().first);
  }
  REQUIRE(store->put(items).stored == 300);
  // Which keys the healthy master (ports[0]) holds; the other two will be asleep.
  std::set<std::string> healthy_keys;
  std::istringstream listing(redis_cli(ports[0], "keys 'page:*'"));
  for (std::string key; std::getline(listing, key);) healthy_keys.insert(key);
  REQUIRE(healthy_keys.size() > 50);
  REQUIRE(healthy_keys.size() < 250);

  std::vector<std::thread> sleepers;
  for (int port : {ports[1], ports[2]}) {
    // Less than the cluster's node timeout (2 s): longer, and the healthy master, alone, would
    // call the cluster down.
    sleepers.emplace_back([port] { redis_cli(port, "debug sleep 1.5"); });
  }
  REQUIRE(testing::wait_until_asleep(ports[1]));  // both servers are inside DEBUG SLEEP now
  REQUIRE(testing::wait_until_asleep(ports[2]));
  using Clock = std::chrono::steady_clock;

  // Across all three masters: the two asleep fail together by one deadline; the healthy one's
  // keys are still there.
  Clock::time_point start = Clock::now();
  bool partial = false;
  try {
    store->get(keys);
  } catch (const remote::RemotePartialError<std::optional<std::string>>& e) {
    partial = true;
    CHECK(e.failed == 300 - healthy_keys.size());
    CHECK(std::string(e.what()).find("no reply within") != npos);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      CAPTURE(keys[i]);
      if (healthy_keys.contains(keys[i])) {
        CHECK(e.results[i] == items[i].second);
      } else {
        CHECK_FALSE(e.results[i].has_value());
      }
    }
  }
  Clock::duration took = Clock::now() - start;
  CHECK(partial);
  CHECK(took >= timeout - 10ms);        // it did wait for the sleepers...
  CHECK(took < timeout + timeout / 2);  // ...once, not once per sleeping master

  // A put across all three: the sleepers' items are refused (counted), the rest stored. (Their
  // masters may be waiting out their backoff, or be tried again and time out again.)
  start = Clock::now();
  const remote::PutResult put = store->put(items);
  took = Clock::now() - start;
  CHECK(put.stored == healthy_keys.size());
  CHECK(put.refused == 300 - healthy_keys.size());
  CAPTURE(put.first_error);
  CHECK((put.first_error.find("no reply within") != npos ||
         put.first_error.find("waiting to reconnect") != npos));
  CHECK(took < timeout + timeout / 2);

  // A batch on the healthy master alone is not held up by the sleepers (nor is the slot map,
  // asked for again after the failure, asked of a sleeper first).
  std::vector<std::string> mine(healthy_keys.begin(), healthy_keys.end());
  start = Clock::now();
  const auto values = store->get(mine);
  took = Clock::now() - start;
  CHECK(took < timeout / 2);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    CHECK(values[i] == fmt::format("value {}", mine[i].substr(mine[i].find(':') + 1)));
  }
  for (std::thread& sleeper : sleepers) sleeper.join();
  // Awake again: the whole batch comes back.
  std::this_thread::sleep_for(60ms);  // past the store's longest backoff
  const auto all = store->get(keys);
  for (int i = 0; i < 300; ++i) CHECK(all[i] == items[i].second);
}

TEST_CASE("cluster: MOVED (a slot reassigned) and ASK (a slot migrating) are followed") {
  RADIXKV_NEED_REDIS();
  const std::vector<int> ports = testing::redis_ports();
  auto store = cluster_store();
  const std::vector<std::string> warm{"warm"};
  store->get(warm);  // the store has read the slot map now

  const std::string key = "moved-key";
  const uint16_t slot = remote::cluster_slot(key);
  int from = -1;
  for (int port : ports) {
    if (redis_cli(port, "cluster countkeysinslot " + std::to_string(slot)) == "0" &&
        redis_cli(port, "get " + key).rfind("MOVED", 0) != 0) {
      from = port;
    }
  }
  REQUIRE(from > 0);
  const int to = from == ports[0] ? ports[1] : ports[0];
  // Move the (empty) slot to `to` as a resharding does: importing and migrating, then the new
  // owner first (which bumps its config epoch, so that gossip does not undo the move), then the
  // others. The store's map is now stale.
  const std::string slot_text = std::to_string(slot);
  REQUIRE(redis_cli(to, "cluster setslot " + slot_text + " importing " + node_id(from)) == "OK");
  REQUIRE(redis_cli(from, "cluster setslot " + slot_text + " migrating " + node_id(to)) == "OK");
  REQUIRE(redis_cli(to, "cluster setslot " + slot_text + " node " + node_id(to)) == "OK");
  for (int port : ports) {
    if (port != to) {
      REQUIRE(redis_cli(port, "cluster setslot " + slot_text + " node " + node_id(to)) == "OK");
    }
  }
  // Until every node agrees (gossip), a node may still send the key elsewhere.
  const auto agreed = [&] {
    for (int port : ports) {
      const std::string answer = redis_cli(port, "get " + key);
      if (port == to ? answer.rfind("MOVED", 0) == 0 : answer.find(std::to_string(to)) == npos) {
        return false;
      }
    }
    return true;
  };
  for (int i = 0; i < 250 && !agreed(); ++i) std::this_thread::sleep_for(20ms);
  REQUIRE(agreed());
  const std::vector<std::pair<std::string, std::string>> item{{key, "here"}};
  CHECK(store->put(item).stored == 1);
  CHECK(store->redirects() >= 1);
  CHECK(redis_cli(to, "get " + key) == "here");
  const uint64_t after_moved = store->redirects();
  CHECK(store->get(std::vector<std::string>{key})[0] == "here");
  CHECK(store->redirects() == after_moved);  // the map learnt the move

  // Now migrate that slot from `to` to a third node: keys not yet moved are asked for there.
  const int third =
      ports[2] == from || ports[2] == to ? (ports[1] == to ? ports[0] : ports[1]) : ports[2];
  REQUIRE(third != to);
  REQUIRE(redis_cli(third, fmt::format("cluster setslot {} importing {}", slot, node_id(to))) ==
          "OK");
  REQUIRE(redis_cli(to, fmt::format("cluster setslot {} migrating {}", slot, node_id(third))) ==
          "OK");
  // A key of the slot that `to` does not hold: `to` answers ASK; the store asks `third`.
  std::string fresh;
  for (int i = 0; fresh.empty(); ++i) {
    const std::string k = fmt::format("{}{}", key, i);
    if (remote::cluster_slot(k) == slot) fresh = k;
    if (i > 2000000) break;
  }
  REQUIRE_FALSE(fresh.empty());
  const uint64_t before_ask = store->redirects();
  CHECK(store->put(std::vector<std::pair<std::string, std::string>>{{fresh, "asked"}}).stored == 1);
  CHECK(store->redirects() == before_ask + 1);
  CHECK(redis_cli(third, fmt::format("cluster countkeysinslot {}", slot)) ==
        "1");                                                                    // it landed there
  CHECK(redis_cli(to, fmt::format("cluster countkeysinslot {}", slot)) == "1");  // `key` only
  CHECK(store->get(std::vector<std::string>{key})[0] == "here");  // still served by `to`
}

TEST_CASE("cluster: two processes share pages through the cluster") {
  RADIXKV_NEED_REDIS();
  const auto [ja, jb] = testing::replay_twice(
      {"replay", "--capacity-tokens", "4096", "--remote", testing::redis_url()});
  CHECK(ja["remote_stored_pages"].get<uint64_t>() > 0);
  CHECK(ja["remote_errors"] == 0);
  CHECK(jb["remote_hit_tokens"].get<uint64_t>() > 0);
  CHECK(jb["hit_rate"].get<double>() >= ja["hit_rate"].get<double>());
  for (int port : testing::redis_ports()) CHECK(std::stoi(redis_cli(port, "dbsize")) > 0);
}

}  // namespace
}  // namespace radixkv
