#include "router/route_ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace radixkv::router {

std::string_view to_string(ObserveRefusal refusal) {
  switch (refusal) {
    case ObserveRefusal::kMalformed:
      return "malformed";
    case ObserveRefusal::kUnknown:
      return "unknown";
    case ObserveRefusal::kExpired:
      return "expired";
    case ObserveRefusal::kDuplicate:
      return "duplicate";
    case ObserveRefusal::kWrongWorker:
      return "wrong_worker";
    case ObserveRefusal::kTooLarge:
      return "too_large";
  }
  return "?";
}

unsigned http_status(ObserveRefusal refusal) {
  switch (refusal) {
    case ObserveRefusal::kUnknown:
      return 404;
    case ObserveRefusal::kExpired:
      return 410;
    case ObserveRefusal::kDuplicate:
    case ObserveRefusal::kWrongWorker:
      return 409;
    case ObserveRefusal::kMalformed:
    case ObserveRefusal::kTooLarge:
      break;
  }
  return 400;
}

RouteLedger::RouteLedger(std::vector<std::string> workers, size_t capacity,
                         std::chrono::milliseconds ttl, uint64_t epoch)
    : workers_(std::move(workers)),
      slots_(capacity),
      ttl_(ttl),
      epoch_(fmt::format("{:016x}", epoch)),
      gaps_(workers_.size() + 1) {
  if (capacity == 0) throw std::invalid_argument("--max-pending-routes: must be at least 1");
  if (ttl.count() <= 0) throw std::invalid_argument("--route-ttl: must be positive");
}

std::string RouteLedger::issue(std::string_view worker, uint64_t predicted, uint64_t prompt_tokens,
                               Clock::time_point now) {
  const auto found = std::find(workers_.begin(), workers_.end(), worker);
  const uint64_t number = next_++;
  slots_[number % slots_.size()] = {
      number,
      found == workers_.end() ? kOtherWorker : static_cast<uint32_t>(found - workers_.begin()),
      false,
      predicted,
      prompt_tokens,
      now};
  return fmt::format("{}-{}", epoch_, number);
}

RouteLedger::Observation RouteLedger::refuse(ObserveRefusal refusal, std::string message) {
  ++refused_[static_cast<size_t>(refusal)];
  return {false, refusal, std::move(message), 0, ""};
}

RouteLedger::Observation RouteLedger::observe(std::string_view id, std::string_view worker,
                                              uint64_t delivered, Clock::time_point now) {
  // The id is quoted in messages only once known to be short and of our alphabet.
  const size_t dash = id.find('-');
  uint64_t number = 0;
  const std::string_view digits = dash == std::string_view::npos ? "" : id.substr(dash + 1);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (dash != epoch_.size() || !std::all_of(id.begin(), id.begin() + dash, hex) || digits.empty() ||
      error != std::errc() || end != digits.data() + digits.size()) {
    return refuse(ObserveRefusal::kUnknown,
                  "route_id: not a route id (expected the \"route_id\" of a /route answer)");
  }
  if (id.substr(0, dash) != epoch_) {
    return refuse(ObserveRefusal::kUnknown, "route_id: " + std::string(id) +
                                                " was issued by another router run (restarted?)");
  }
  if (number == 0 || number >= next_) {
    return refuse(ObserveRefusal::kUnknown,
                  "route_id: " + std::string(id) + " was never issued by this router");
  }
  Slot& slot = slots_[number % slots_.size()];
  if (slot.number != number) {
    return refuse(
        ObserveRefusal::kExpired,
        fmt::format("route_id: {} is older than the last {} routes, forgotten", id, slots_.size()));
  }
  if (now - slot.issued > ttl_) {
    return refuse(ObserveRefusal::kExpired,
                  fmt::format("route_id: {} is older than {} s, forgotten", id,
                              std::chrono::duration<double>(ttl_).count()));
  }
  if (slot.observed) {
    return refuse(ObserveRefusal::kDuplicate, "route_id: " + std::string(id) + " observed already");
  }
  // Both arms string_views: with "" and a std::string the ?: would make a temporary string.
  const std::string_view chosen =
      slot.worker == kOtherWorker ? std::string_view() : std::string_view(workers_[slot.worker]);
  if (!worker.empty() && (slot.worker == kOtherWorker || worker != chosen)) {
    return refuse(ObserveRefusal::kWrongWorker,
                  fmt::format("worker: route {} chose {}", id,
                              slot.worker == kOtherWorker ? "a candidate that is no worker of "
                                                            "this router"
                                                          : std::string(chosen)));
  }
  if (slot.prompt_tokens != 0 && delivered > slot.prompt_tokens) {
    return refuse(ObserveRefusal::kTooLarge,
                  fmt::format("hit_tokens: {} is more than the route's prompt of {} tokens",
                              delivered, slot.prompt_tokens));
  }
  slot.observed = true;
  gaps_[slot.worker == kOtherWorker ? workers_.size() : slot.worker].add(slot.predicted, delivered);
  return {true, ObserveRefusal::kUnknown, "", slot.predicted, std::string(chosen)};
}

}  // namespace radixkv::router
