// The JSON of the router's HTTP API (docs/cluster.md, "HTTP API"), apart from the server, so that
// it can be tested without sockets.
//
// POST /route request (one of tokens or block_hashes):
//   {"tokens": [int32...], "page_size": int >= 1 (default 16), "namespace": uint64 (default 0),
//    "lora_name": str, "cache_salt": str,
//    "block_hashes": [uint64 | int64 | str...] (page_size: the tokens of each),
//    "candidates": [{"worker": str, "load": number >= 0 (default 0)}...]  (default: every worker
//                                                                          that is up)}
// With tokens the router keys their blocks as the workers' events are keyed (router/block_key.h),
// at every block size the workers use; page_size is the unit of request_blocks, the overlaps and
// the loads. block_hashes are engine hashes, as each worker named its blocks (a str one is taken
// as the events take it: XXH3-64 of its bytes; a negative one as its two's complement).
// Response: {"worker": str, "outcome": str, "request_blocks": number,
//            "route_id": str, "predicted_hit_tokens": int,
//            "candidates": [{"worker", "known", "overlap_blocks", "weighted_overlap_blocks",
//                            "load", "prefill_blocks", "score"}...]}
// (router/route_cost.h says what each means; route_id and predicted_hit_tokens:
// router/route_ledger.h, router/overlap_gap.h).
//
// POST /observe request: {"route_id": str, "hit_tokens": int >= 0, "worker": str (optional)}:
// the tokens the engine reused when it admitted the request of that route.
//
// Parsing is bounded: a body nested deeper than kMaxDepth levels is refused before anything reads
// it, numbers out of range (1e400, 2^64) are refused, and an error message quotes at most a few
// dozen characters of the value it names.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "router/route_cost.h"

namespace radixkv::router {

// A bad request: the message names the field and says what is wrong with it.
class RouteRequestError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct RouteQuery {
  RouteRequest request;
  std::vector<Candidate> candidates;
};

inline constexpr size_t kMaxDepth = 8;

RouteQuery parse_route_request(std::string_view body);
std::string render_route_decision(const RouteDecision& decision, std::string_view route_id,
                                  uint64_t predicted_hit_tokens);

struct ObserveQuery {
  std::string route_id;  // at most kMaxRouteIdBytes
  std::string worker;    // empty: not given
  uint64_t hit_tokens = 0;
};
inline constexpr size_t kMaxRouteIdBytes = 64;
ObserveQuery parse_observe_request(std::string_view body);
// {"route_id", "worker", "predicted_hit_tokens", "hit_tokens"}
std::string render_observation(std::string_view route_id, std::string_view worker,
                               uint64_t predicted_hit_tokens, uint64_t hit_tokens);
// {"worker": name, "pages": n, "blocks": [{"hash": uint64, "mediums": [str...]}...]}
std::string render_holdings(const std::string& worker, const std::vector<BlockHolding>& blocks);
// {"error": message}
std::string render_error(std::string_view message);

}  // namespace radixkv::router
