// How the cluster replay (tools/replay/cluster_replay.h) picks a worker for each request. Every
// policy sees the same inputs: each worker's overlap (the leading blocks of the request it holds,
// from the router's BlockIndex fed by the workers' KV events) and its load (the blocks of the
// requests routed to it that have not finished: prompt tokens / page size, Dynamo's "active
// blocks"). Workers are numbered 0 .. N-1.
//
//   round-robin   request k (counting routed requests from 0) goes to worker k mod N.
//   least-loaded  the smallest load; ties: the smaller number.
//   prefix        the largest overlap; ties: the smaller load, then the smaller number. (With no
//                 overlap anywhere it is least-loaded.)
//   prefix-load   the router service's decision (router/route_cost.h, choose_worker with the
//                 candidates in worker order): the lowest overlap_weight * (request blocks -
//                 overlap) + load + request blocks; ties: the smaller load, the larger overlap,
//                 the smaller number.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "router/route_cost.h"

namespace radixkv::tools {

enum class RoutePolicy : uint8_t { kRoundRobin, kLeastLoaded, kPrefix, kPrefixLoad };

std::string_view to_string(RoutePolicy policy);
// "round-robin", "least-loaded", "prefix" or "prefix-load"; throws std::invalid_argument listing
// them otherwise.
RoutePolicy parse_route_policy(std::string_view name);
std::string route_policy_names();

class ClusterRouter {
 public:
  // Throws std::invalid_argument when workers is 0 or the weight is negative or not finite.
  ClusterRouter(RoutePolicy policy, uint32_t workers, router::CostWeights weights = {});

  // The chosen worker. `overlaps` and `loads` have one entry per worker (std::invalid_argument
  // otherwise); `request_blocks` is the request's length in blocks (fractional).
  uint32_t choose(std::span<const uint32_t> overlaps, std::span<const double> loads,
                  double request_blocks);

  RoutePolicy policy() const { return policy_; }
  uint32_t workers() const { return workers_; }

 private:
  RoutePolicy policy_;
  uint32_t workers_;
  router::CostWeights weights_;
  uint64_t routed_ = 0;  // round-robin's count
};

}  // namespace radixkv::tools
