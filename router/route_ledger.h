// RouteLedger: the routes a router answered, kept until the engine says what it delivered
// (POST /observe, docs/cluster.md), so that the router can export predicted against delivered
// overlap (router/overlap_gap.h) per worker.
//
// Bounded whatever clients send: a fixed ring of `capacity` entries, one per route, written in
// issue order; route k lives in slot k mod capacity until route k + capacity overwrites it. An id
// is "<epoch>-<k>": the epoch (16 hex digits, random per ledger) tells a restarted router's ids
// from this one's, k is the route's number from 1. An observation of route k is refused when
//   - the id is not of this form, has another epoch, or k was never issued      (kUnknown)
//   - the slot holds a later route, or the route is older than `ttl`             (kExpired)
//   - route k was observed already                                               (kDuplicate)
//   - it names a worker other than the one the route chose                       (kWrongWorker)
//   - its hit exceeds the prompt the route was asked for                         (kTooLarge)
// Each refusal is counted by reason; nothing a client sends grows the ledger. Workers are the
// router's own (indices into the names given at construction); a route to a candidate that is not
// one is kept under kOtherWorker, so that client-chosen names never become metric labels.
// Not thread-safe: the router service calls it under its lock.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "router/overlap_gap.h"

namespace radixkv::router {

enum class ObserveRefusal : uint8_t {
  kMalformed,  // the body (counted by the service; the ledger never sees it)
  kUnknown,
  kExpired,
  kDuplicate,
  kWrongWorker,
  kTooLarge,
};
inline constexpr std::array<ObserveRefusal, 6> kObserveRefusals = {
    ObserveRefusal::kMalformed, ObserveRefusal::kUnknown,     ObserveRefusal::kExpired,
    ObserveRefusal::kDuplicate, ObserveRefusal::kWrongWorker, ObserveRefusal::kTooLarge};
std::string_view to_string(ObserveRefusal refusal);  // "malformed", "unknown", ...
unsigned http_status(ObserveRefusal refusal);        // 400, 404, 410, 409, 409, 400

class RouteLedger {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr uint32_t kOtherWorker = UINT32_MAX;

  // Throws std::invalid_argument when capacity is 0 or ttl is not positive.
  RouteLedger(std::vector<std::string> workers, size_t capacity, std::chrono::milliseconds ttl,
              uint64_t epoch);

  // Records a route to `worker` (its name; not one of ours: kOtherWorker) predicting `predicted`
  // tokens of a prompt of `prompt_tokens` (0: unknown). Returns its id.
  std::string issue(std::string_view worker, uint64_t predicted, uint64_t prompt_tokens,
                    Clock::time_point now);

  struct Observation {
    bool accepted = false;
    ObserveRefusal refusal = ObserveRefusal::kUnknown;  // when not accepted
    std::string message;                                // when not accepted: names the field
    uint64_t predicted = 0;                             // when accepted
    std::string worker;  // when accepted: the worker the route chose ("" for kOtherWorker)
  };
  // The engine delivered `delivered` tokens for route `id`; `worker` empty: not checked.
  Observation observe(std::string_view id, std::string_view worker, uint64_t delivered,
                      Clock::time_point now);
  // Counts a refusal the ledger did not see (a malformed body).
  void refuse(ObserveRefusal refusal) { ++refused_[static_cast<size_t>(refusal)]; }

  // Per worker of the constructor's list, then kOtherWorker's sums last.
  const std::vector<OverlapGap>& gaps() const { return gaps_; }
  uint64_t refused(ObserveRefusal refusal) const { return refused_[static_cast<size_t>(refusal)]; }
  const std::vector<std::string>& workers() const { return workers_; }
  uint64_t issued() const { return next_ - 1; }
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    uint64_t number = 0;  // 0: never written
    uint32_t worker = kOtherWorker;
    bool observed = false;
    uint64_t predicted = 0;
    uint64_t prompt_tokens = 0;
    Clock::time_point issued{};
  };
  Observation refuse(ObserveRefusal refusal, std::string message);

  std::vector<std::string> workers_;
  std::vector<Slot> slots_;
  std::chrono::milliseconds ttl_;
  std::string epoch_;  // 16 hex digits
  uint64_t next_ = 1;
  std::vector<OverlapGap> gaps_;
  std::array<uint64_t, kObserveRefusals.size()> refused_{};
};

}  // namespace radixkv::router
