// What the tests against a real Redis share: the server scripts/with-redis.sh started for this test
// case (its URL and ports from the environment), redis-cli for what the tests do to it behind the
// client's back (DEBUG SLEEP, CONFIG SET, SHUTDOWN), and a restart on the same port.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace radixkv::testing {

inline std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// Why no server is there, or nullopt when RADIXKV_TEST_REDIS_URL names one.
inline std::optional<std::string> redis_missing() {
  if (!env_or_empty("RADIXKV_TEST_REDIS_URL").empty()) return std::nullopt;
  const std::string why = env_or_empty("RADIXKV_TEST_REDIS_SKIP");
  return why.empty() ? "no Redis: run the test through scripts/with-redis.sh (ctest does)" : why;
}

inline std::string redis_url() { return env_or_empty("RADIXKV_TEST_REDIS_URL"); }

inline std::vector<int> redis_ports() {
  std::vector<int> ports;
  std::istringstream in(env_or_empty("RADIXKV_TEST_REDIS_PORTS"));
  for (int port; in >> port;) ports.push_back(port);
  return ports;
}

// Runs redis-cli against `port` and returns what it printed (stdout and stderr).
inline std::string redis_cli(int port, const std::string& args) {
  const std::string command = fmt::format("redis-cli -p {} {} 2>&1", port, args);
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
      out.append(buffer, n);
    ::pclose(pipe);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

inline bool redis_answers(int port) { return redis_cli(port, "ping") == "PONG"; }

// Waits (up to `limit`) until the server on `port` stops answering a PING within 250 ms: a
// DEBUG SLEEP sent from another thread has reached it. A fixed pause is not enough on a loaded
// machine, where starting redis-cli alone can take longer than the pause.
inline bool wait_until_asleep(int port, std::chrono::milliseconds limit = std::chrono::seconds(1)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    const std::string command = fmt::format("timeout 0.25 redis-cli -p {} ping 2>&1", port);
    std::string out;
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
      char buffer[64];
      for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
        out.append(buffer, n);
      ::pclose(pipe);
    }
    if (out.find("PONG") == std::string::npos) return true;
  }
  return false;
}

// Stops the server on `port` at once, without saving (a crash, as far as clients can tell).
inline void kill_redis(int port) {
  redis_cli(port, "shutdown nosave");
  for (int i = 0; i < 100 && redis_answers(port); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Starts an empty server on `port` again, as with-redis.sh does (its pid file where the script
// stops it). Returns whether it answers.
inline bool restart_redis(int port) {
  const std::string dir = env_or_empty("RADIXKV_TEST_REDIS_DIR");
  const std::string command = fmt::format(
      "redis-server --port {0} --bind 127.0.0.1 --save '' --appendonly no --daemonize yes "
      "--enable-debug-command local --dir {1} --pidfile {1}/redis-{0}.pid "
      "--logfile {1}/redis-{0}.log >/dev/null 2>&1",
      port, dir);
  if (std::system(command.c_str()) != 0) return false;
  for (int i = 0; i < 100; ++i) {
    if (redis_answers(port)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace radixkv::testing

// In a test case's own body: skips (fails under CI=true) without a server.
#define RADIXKV_NEED_REDIS()                                                  \
  do {                                                                        \
    if (const auto radixkv_redis_why = ::radixkv::testing::redis_missing()) { \
      RADIXKV_SKIP_OUTSIDE_CI(*radixkv_redis_why);                            \
    }                                                                         \
  } while (false)
