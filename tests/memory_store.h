// MemoryStore: a RemoteStore in a map, for tests of the remote tier without a server. It can be
// told to fail (every call throws RemoteError until told otherwise), to wait out a backoff (every
// call throws RemoteUnavailable, as a store does between a failure and its reconnect) or to fail
// some keys only (a
// get naming one throws RemotePartialError, as a cluster with one master down does, with those
// keys reading as missing and the others' values kept), its gets can be held at a
// closed gate (each waits for it up to `gate_timeout`, then throws RemoteError as a timed-out
// server would), and it counts its calls.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "remote/remote_store.h"

namespace radixkv::testing {

class MemoryStore final : public remote::RemoteStore {
 public:
  struct Shared {
    std::mutex mutex;
    std::map<std::string, std::string> values;
    std::set<std::string> failing_keys;  // under `mutex`
    std::atomic<bool> failing{false};
    std::atomic<bool> backing_off{false};
    std::atomic<bool> gate_closed{false};
    std::chrono::milliseconds gate_timeout{100};
    std::atomic<int> at_gate{0};             // gets waiting at the closed gate now
    std::chrono::microseconds get_delay{0};  // every get takes at least this long (a slow server)
    uint64_t gets = 0, puts = 0;
  };
  explicit MemoryStore(Shared& shared) : shared_(shared) {}

  std::vector<bool> exists(std::span<const std::string> keys) override {
    std::lock_guard lock(shared_.mutex);
    check();
    std::vector<bool> out;
    for (const std::string& key : keys) out.push_back(shared_.values.contains(key));
    return out;
  }
  std::vector<std::optional<std::string>> get(std::span<const std::string> keys) override {
    const auto deadline = std::chrono::steady_clock::now() + shared_.gate_timeout;
    if (shared_.gate_closed) {
      ++shared_.at_gate;
      while (shared_.gate_closed && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      --shared_.at_gate;
      if (shared_.gate_closed) throw remote::RemoteError("memory store: timed out at the gate");
    }
    std::this_thread::sleep_for(shared_.get_delay);
    std::lock_guard lock(shared_.mutex);
    check();
    ++shared_.gets;
    std::vector<std::optional<std::string>> out;
    std::size_t failed = 0;
    for (const std::string& key : keys) {
      const auto it = shared_.values.find(key);
      const bool fails = shared_.failing_keys.contains(key);
      failed += fails ? 1 : 0;
      out.push_back(fails || it == shared_.values.end() ? std::nullopt : std::optional(it->second));
    }
    if (failed > 0) {
      throw remote::RemotePartialError<std::optional<std::string>>(
          "memory store: keys told to fail", std::move(out), failed);
    }
    return out;
  }
  remote::PutResult put(std::span<const std::pair<std::string, std::string>> items) override {
    std::lock_guard lock(shared_.mutex);
    check();
    ++shared_.puts;
    for (const auto& [key, value] : items) shared_.values[key] = value;
    return {static_cast<uint32_t>(items.size()), 0, {}};
  }
  std::string describe() const override { return "memory"; }

 private:
  void check() const {
    if (shared_.failing) throw remote::RemoteError("memory store: told to fail");
    if (shared_.backing_off) throw remote::RemoteUnavailable("memory store: waiting to reconnect");
  }
  Shared& shared_;
};

}  // namespace radixkv::testing
