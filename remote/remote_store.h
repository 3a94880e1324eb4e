// RemoteStore: the key-value store under the local tiers, as the remote tier uses it: batches of
// exists / get / put, each one round trip (pipelines to every server at once), bounded by the
// store's timeout as a whole. Redis (remote/redis_store.h) is the one implementation; another
// store (Valkey speaks the same protocol; a Mooncake or 3FS client would not) implements these
// four calls.
//
// Failures: a call that cannot complete (connection refused or lost, timeout, a protocol error)
// throws RemoteError; the store then reconnects on a later call, not before its backoff has passed
// (calls meanwhile throw RemoteUnavailable at once, without touching the network). A call that
// completes for some keys only (a cluster with one server failing) throws RemotePartialError
// holding the rest (get, exists), or counts the failed items as refused (put). A put the server
// refuses item by item (maxmemory with noeviction) is counted in the result, not thrown.
// Messages never hold a password. Not thread-safe: one thread per store (the remote tier gives
// its writer thread a store of its own).
#pragma once

#include <cstdint>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace radixkv::remote {

class RemoteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Refused without trying: the store is waiting out its backoff after an error.
class RemoteUnavailable : public RemoteError {
 public:
  using RemoteError::RemoteError;
};

// Part of a batch failed (one server of a cluster down or slow) and the rest did not: `results`
// holds what the rest gave, in key order, with a failed key reading as missing (nullopt, false).
// get() throws RemotePartialError<std::optional<std::string>>, exists() RemotePartialError<bool>.
template <class Result>
class RemotePartialError : public RemoteError {
 public:
  RemotePartialError(const std::string& what, std::vector<Result> results, std::size_t failed)
      : RemoteError(what), results(std::move(results)), failed(failed) {}
  std::vector<Result> results;
  std::size_t failed;  // keys that failed
};

struct PutResult {
  uint32_t stored = 0;
  uint32_t refused = 0;     // items the server answered with an error (e.g. OOM)
  std::string first_error;  // the server's message for the first refused item
};

// `message` followed by `detail`, as the first failure's message, into `first` unless `first` holds
// one already. Never throws: out of memory keeps no message (the failure is still counted where
// it happened).
inline void keep_first_error(std::string& first, std::string_view message,
                             std::string_view detail = {}) noexcept {
  if (!first.empty()) return;
  try {
    first.append(message).append(detail);
  } catch (const std::bad_alloc&) {
    first.clear();
  }
}

class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  virtual std::vector<bool> exists(std::span<const std::string> keys) = 0;
  // The values of `keys`, in order; nullopt for a key the store does not hold.
  virtual std::vector<std::optional<std::string>> get(std::span<const std::string> keys) = 0;
  virtual PutResult put(std::span<const std::pair<std::string, std::string>> items) = 0;
  // Where the store is, credentials masked (for reports and messages).
  virtual std::string describe() const = 0;
};

}  // namespace radixkv::remote
