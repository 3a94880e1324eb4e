#include "router/route_cost.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace radixkv::router {

namespace {

void check_amount(double value, const std::string& what) {
  if (!std::isfinite(value) || value < 0) {
    throw std::invalid_argument(what + " must be a finite number >= 0, got " +
                                std::to_string(value));
  }
}

}  // namespace

std::string_view to_string(RouteOutcome outcome) {
  switch (outcome) {
    case RouteOutcome::kPrefixHit:
      return "prefix_hit";
    case RouteOutcome::kNoOverlap:
      return "no_overlap";
    case RouteOutcome::kLoadOverPrefix:
      return "load_over_prefix";
  }
  return "?";
}

RouteDecision choose_worker(std::vector<CandidateScore> candidates, double request_blocks,
                            const CostWeights& weights) {
  if (candidates.empty()) throw std::invalid_argument("no candidate worker to route to");
  check_amount(request_blocks, "request_blocks");
  check_amount(weights.overlap_score_weight, "overlap_score_weight");
  double best_overlap = 0;
  for (CandidateScore& c : candidates) {
    check_amount(c.load, "the load of worker " + c.worker);
    c.prefill_blocks = std::max(request_blocks - c.weighted_overlap_blocks, 0.0);
    c.score = weights.overlap_score_weight * c.prefill_blocks + (c.load + request_blocks);
    best_overlap = std::max(best_overlap, c.weighted_overlap_blocks);
  }
  const auto better = [](const CandidateScore& a, const CandidateScore& b) {
    if (a.score != b.score) return a.score < b.score;
    if (a.load != b.load) return a.load < b.load;
    return a.weighted_overlap_blocks > b.weighted_overlap_blocks;
  };
  size_t chosen = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (better(candidates[i], candidates[chosen])) chosen = i;
  }
  RouteDecision decision;
  decision.chosen = chosen;
  decision.request_blocks = request_blocks;
  decision.outcome = best_overlap == 0 ? RouteOutcome::kNoOverlap
                     : candidates[chosen].weighted_overlap_blocks == best_overlap
                         ? RouteOutcome::kPrefixHit
                         : RouteOutcome::kLoadOverPrefix;
  decision.candidates = std::move(candidates);
  return decision;
}

double RouteRequest::request_blocks() const {
  return by_hashes ? static_cast<double>(block_hashes.size())
                   : static_cast<double>(tokens.size()) / page_size;
}

RouteDecision route(BlockIndex& index, const RouteRequest& request,
                    std::span<const Candidate> candidates, const CostWeights& weights) {
  if (!request.by_hashes && request.page_size == 0) {
    throw std::invalid_argument("page_size must be at least 1");
  }
  // Overlaps in the request's blocks: by hashes they are blocks already; by tokens, pages.
  std::vector<Overlap> overlaps = request.by_hashes
                                      ? index.match_hashes(request.block_hashes)
                                      : index.match_tokens(request.ns, request.tokens);
  if (!request.by_hashes) {
    for (Overlap& o : overlaps) {
      o.length /= request.page_size;
      o.weighted /= request.page_size;
    }
  }
  std::vector<CandidateScore> scored;
  auto add = [&](const std::string& worker, double load) {
    CandidateScore score{worker, false, 0, 0, load, 0, 0};
    if (const std::optional<WorkerId> id = index.find_worker(worker)) {
      score.known = true;
      score.overlap_blocks = overlaps[*id].length;
      score.weighted_overlap_blocks = overlaps[*id].weighted;
    }
    scored.push_back(std::move(score));
  };
  if (candidates.empty()) {
    for (WorkerId w = 0; w < index.num_workers(); ++w) add(index.worker_name(w), 0);
  } else {
    for (const Candidate& c : candidates) add(c.worker, c.load);
  }
  return choose_worker(std::move(scored), request.request_blocks(), weights);
}

}  // namespace radixkv::router
