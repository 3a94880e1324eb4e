#include "tools/replay/cluster_routing.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace radixkv::tools {

namespace {

constexpr std::pair<RoutePolicy, std::string_view> kNames[] = {
    {RoutePolicy::kRoundRobin, "round-robin"},
    {RoutePolicy::kLeastLoaded, "least-loaded"},
    {RoutePolicy::kPrefix, "prefix"},
    {RoutePolicy::kPrefixLoad, "prefix-load"},
};

uint32_t least_loaded(std::span<const double> loads) {
  uint32_t best = 0;
  for (uint32_t w = 1; w < loads.size(); ++w) {
    if (loads[w] < loads[best]) best = w;
  }
  return best;
}

uint32_t longest_prefix(std::span<const uint32_t> overlaps, std::span<const double> loads) {
  uint32_t best = 0;
  for (uint32_t w = 1; w < overlaps.size(); ++w) {
    if (overlaps[w] > overlaps[best] || (overlaps[w] == overlaps[best] && loads[w] < loads[best])) {
      best = w;
    }
  }
  return best;
}

}  // namespace

std::string_view to_string(RoutePolicy policy) {
  for (const auto& [p, name] : kNames) {
    if (p == policy) return name;
  }
  return "?";
}

std::string route_policy_names() {
  std::string names;
  for (const auto& [p, name] : kNames) names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

RoutePolicy parse_route_policy(std::string_view name) {
  for (const auto& [p, known] : kNames) {
    if (known == name) return p;
  }
  throw std::invalid_argument(
      fmt::format("unknown routing policy '{}' (known: {})", name, route_policy_names()));
}

ClusterRouter::ClusterRouter(RoutePolicy policy, uint32_t workers, router::CostWeights weights)
    : policy_(policy), workers_(workers), weights_(weights) {
  if (workers == 0) throw std::invalid_argument("a cluster needs at least 1 worker");
  if (!std::isfinite(weights.overlap_score_weight) || weights.overlap_score_weight < 0) {
    throw std::invalid_argument(fmt::format("the overlap weight must be a number >= 0, got {}",
                                            weights.overlap_score_weight));
  }
}

uint32_t ClusterRouter::choose(std::span<const uint32_t> overlaps, std::span<const double> loads,
                               double request_blocks) {
  if (overlaps.size() != workers_ || loads.size() != workers_) {
    throw std::invalid_argument(
        fmt::format("ClusterRouter::choose: {} overlaps and {} loads for {} workers",
                    overlaps.size(), loads.size(), workers_));
  }
  const uint64_t k = routed_++;
  switch (policy_) {
    case RoutePolicy::kRoundRobin:
      return static_cast<uint32_t>(k % workers_);
    case RoutePolicy::kLeastLoaded:
      return least_loaded(loads);
    case RoutePolicy::kPrefix:
      return longest_prefix(overlaps, loads);
    case RoutePolicy::kPrefixLoad:
      break;
  }
  std::vector<router::CandidateScore> candidates(workers_);
  for (uint32_t w = 0; w < workers_; ++w) {
    candidates[w].worker = std::to_string(w);
    candidates[w].known = true;
    candidates[w].overlap_blocks = overlaps[w];  // the replay's blocks all count in full
    candidates[w].weighted_overlap_blocks = overlaps[w];
    candidates[w].load = loads[w];
  }
  return static_cast<uint32_t>(
      router::choose_worker(std::move(candidates), request_blocks, weights_).chosen);
}

}  // namespace radixkv::tools
