// Choosing a worker for a request: NVIDIA Dynamo's KV router cost (docs.nvidia.com/dynamo, KV
// Router, "Cost Calculation"), with each cached block weighted by the tier that holds it:
//
//   prefill_blocks = request_blocks - weighted_overlap_blocks   blocks the worker would compute
//   decode_blocks  = load + request_blocks                      the worker's active blocks with it
//   score          = overlap_score_weight * prefill_blocks + decode_blocks
//
// weighted_overlap_blocks counts each block of the cached prefix at its tier's weight
// (router/tier_weights.h: a block in CPU memory is worth less than one on the GPU, since it must be
// copied back), as llm-d's tiered prefix scorer does; with every block on the GPU it is Dynamo's
// overlap. The candidate with the lowest score wins; ties go to the smaller load, then the larger
// weighted overlap, then the candidate listed first. `load` is what the caller knows of each
// worker's active KV blocks (Dynamo's active decode blocks); `request_blocks` is the request's
// length in blocks (tokens / page size, fractional for a partial last page). overlap_score_weight
// (Dynamo's --kv-overlap-score-weight, default 1) trades cache reuse (higher: better TTFT) against
// balance (lower); 0 routes on load alone.
//
// The outcome says why the winner won: kPrefixHit (it has the largest weighted overlap, > 0),
// kNoOverlap (no candidate holds a block of the request), kLoadOverPrefix (another candidate held
// more of the prefix, but its load outweighed that).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "router/block_index.h"

namespace radixkv::router {

struct CostWeights {
  double overlap_score_weight = 1.0;
};

struct Candidate {
  std::string worker;
  double load = 0;  // active KV blocks on the worker
};

struct CandidateScore {
  std::string worker;
  bool known = false;         // the index has heard of this worker
  double overlap_blocks = 0;  // the cached prefix, in the request's blocks
  double weighted_overlap_blocks = 0;
  double load = 0;
  double prefill_blocks = 0;
  double score = 0;
};

enum class RouteOutcome { kPrefixHit, kNoOverlap, kLoadOverPrefix };
std::string_view to_string(RouteOutcome outcome);

struct RouteDecision {
  size_t chosen = 0;  // into candidates
  double request_blocks = 0;
  RouteOutcome outcome = RouteOutcome::kNoOverlap;
  std::vector<CandidateScore> candidates;
};

// What a request is matched by: its tokens — with what else keys its blocks, and the page size
// its blocks and loads are counted in — or the engine block hashes of its blocks.
struct RouteRequest {
  std::vector<TokenId> tokens{};
  KeyNamespace ns{};
  uint32_t page_size = 16;  // vLLM's default block size
  std::vector<BlockHash> block_hashes{};
  bool by_hashes = false;
  double request_blocks() const;
};

// Scores `candidates` (their worker, known and overlaps filled in) and picks one. Throws
// std::invalid_argument when there is none, a load or request_blocks is negative or not finite, or
// the weight is negative or not finite.
RouteDecision choose_worker(std::vector<CandidateScore> candidates, double request_blocks,
                            const CostWeights& weights);

// The whole decision against an index: each candidate's overlap with the request (a worker the
// index does not know has none), then choose_worker(). With no candidates, every worker the index
// knows is one, at load 0.
RouteDecision route(BlockIndex& index, const RouteRequest& request,
                    std::span<const Candidate> candidates, const CostWeights& weights);

}  // namespace radixkv::router
