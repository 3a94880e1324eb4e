// The JSON of the router's HTTP API (docs/cluster.md, "The router's HTTP API"), apart from the
// server, so that it can be tested without sockets.
//
// POST /route request (one of tokens or block_hashes):
//   {"tokens": [int32...], "page_size": int >= 1, "namespace": uint64 (default 0),
//    "block_hashes": [uint64...],
//    "candidates": [{"worker": str, "load": number >= 0 (default 0)}...]  (default: every worker
//                                                                          the router knows)}
// With tokens the router chain-hashes their whole pages as the workers do (events/block_hash.h)
// and request_blocks = tokens / page_size; with block_hashes, request_blocks = their count.
// Response: {"worker": str, "outcome": str, "request_blocks": number,
//            "candidates": [{"worker", "known", "overlap_blocks", "load", "prefill_blocks",
//                            "score"}...]}   (router/route_cost.h says what each means)
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
  std::vector<BlockHash> hashes;
  double request_blocks = 0;
  std::vector<Candidate> candidates;
};

RouteQuery parse_route_request(std::string_view body);
std::string render_route_decision(const RouteDecision& decision);
// {"worker": name, "pages": n, "blocks": [{"hash": uint64, "mediums": [str...]}...]}
std::string render_holdings(const std::string& worker, const std::vector<BlockHolding>& blocks);
// {"error": message}
std::string render_error(std::string_view message);

}  // namespace radixkv::router
