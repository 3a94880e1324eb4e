#include "router/route_api.h"

#include <simdjson.h>
#include <xxhash.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace radixkv::router {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Worker names and messages quote what clients sent, which need not be valid UTF-8.
std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw RouteRequestError(field + ": " + why);
}

// A value as an error message shows it: a scalar as its JSON (cut at 40 characters), a container
// by its kind, so that no message grows with the body.
std::string shown(const element& value) {
  switch (value.type()) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    default: {
      std::string text = simdjson::minify(value);
      if (text.size() > 40) text = text.substr(0, 37) + "...";
      return text;
    }
  }
}

bool is_integer(const element& value) {
  return value.type() == element_type::INT64 || value.type() == element_type::UINT64;
}

uint64_t read_uint(const element& value, const std::string& field, uint64_t max) {
  uint64_t v = 0;
  if (!is_integer(value) || value.get_uint64().get(v) != simdjson::SUCCESS) {
    bad(field, "expected an integer >= 0, got " + shown(value));
  }
  if (v > max) bad(field, std::to_string(v) + " is larger than " + std::to_string(max));
  return v;
}

std::string read_string(const element& value, const std::string& field) {
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) {
    bad(field, "expected a string, got " + shown(value));
  }
  return std::string(text);
}

simdjson::dom::array read_array(const element& value, const std::string& field) {
  simdjson::dom::array list;
  if (value.get_array().get(list) != simdjson::SUCCESS) {
    bad(field, "expected an array, got " + shown(value));
  }
  return list;
}

// A block hash as the events take it: an integer (negative: two's complement) or a str's XXH3-64.
BlockHash read_hash(const element& value, const std::string& field) {
  switch (value.type()) {
    case element_type::UINT64:
      return value.get_uint64().value_unsafe();
    case element_type::INT64:
      return static_cast<BlockHash>(value.get_int64().value_unsafe());
    case element_type::STRING: {
      const std::string_view text = value.get_string().value_unsafe();
      if (text.empty()) bad(field, "an empty block hash");
      return XXH3_64bits(text.data(), text.size());
    }
    default:
      bad(field, "expected a block hash (an integer or a string), got " + shown(value));
  }
}

std::vector<Candidate> read_candidates(const simdjson::dom::object& body) {
  std::vector<Candidate> candidates;
  element list_value;
  if (body.at_key("candidates").get(list_value) != simdjson::SUCCESS) return candidates;
  const simdjson::dom::array list = read_array(list_value, "candidates");
  if (list.size() == 0) bad("candidates", "empty: leave it out to route among every worker");
  size_t i = 0;
  for (const element c : list) {
    const std::string at = "candidates[" + std::to_string(i++) + "]";
    simdjson::dom::object fields;
    if (c.get_object().get(fields) != simdjson::SUCCESS) {
      bad(at, "expected an object, got " + shown(c));
    }
    element worker;
    std::string_view name;
    if (fields.at_key("worker").get(worker) != simdjson::SUCCESS ||
        worker.get_string().get(name) != simdjson::SUCCESS || name.empty()) {
      bad(at + ".worker", "expected a worker name");
    }
    Candidate candidate{std::string(name), 0};
    element load;
    if (fields.at_key("load").get(load) == simdjson::SUCCESS) {
      double v = 0;
      if (load.get_double().get(v) != simdjson::SUCCESS || !std::isfinite(v) || v < 0) {
        bad(at + ".load", "expected a number >= 0, got " + shown(load));
      }
      candidate.load = v;
    }
    candidates.push_back(std::move(candidate));
  }
  return candidates;
}

simdjson::dom::parser& parser() {
  // One per thread, reused: its buffers grow to the largest body once. Bounded in depth, so that
  // a body of nested arrays is refused while it is read, before anything walks it.
  thread_local simdjson::dom::parser p = [] {
    simdjson::dom::parser made;
    if (made.allocate(4096, kMaxDepth) != simdjson::SUCCESS) throw std::bad_alloc();
    return made;
  }();
  return p;
}

// The body as a JSON object, parsed within the depth bound.
simdjson::dom::object parse_body(std::string_view body_text) {
  element doc;
  if (const auto error = parser().parse(body_text.data(), body_text.size()).get(doc);
      error != simdjson::SUCCESS) {
    if (error == simdjson::DEPTH_ERROR) {
      bad("body", "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    if (error == simdjson::MEMALLOC) throw std::bad_alloc();
    bad("body",
        std::string("not JSON, or a number out of range (") + simdjson::error_message(error) + ")");
  }
  simdjson::dom::object body;
  if (doc.get_object().get(body) != simdjson::SUCCESS) bad("body", "expected a JSON object");
  return body;
}

}  // namespace

RouteQuery parse_route_request(std::string_view body_text) {
  const simdjson::dom::object body = parse_body(body_text);
  element tokens_value, hashes_value, value;
  const bool has_tokens = body.at_key("tokens").get(tokens_value) == simdjson::SUCCESS;
  const bool has_hashes = body.at_key("block_hashes").get(hashes_value) == simdjson::SUCCESS;
  if (has_tokens == has_hashes) {
    bad("body", "give exactly one of \"tokens\" (with \"page_size\") or \"block_hashes\"");
  }
  RouteQuery query;
  RouteRequest& request = query.request;
  // With block_hashes, the tokens per block: the unit of predicted_hit_tokens.
  if (body.at_key("page_size").get(value) == simdjson::SUCCESS) {
    request.page_size =
        static_cast<uint32_t>(read_uint(value, "page_size", std::numeric_limits<uint32_t>::max()));
    if (request.page_size == 0) bad("page_size", "must be at least 1");
  }
  if (has_tokens) {
    if (body.at_key("namespace").get(value) == simdjson::SUCCESS) {
      request.ns.ns = read_uint(value, "namespace", std::numeric_limits<uint64_t>::max());
    }
    if (body.at_key("lora_name").get(value) == simdjson::SUCCESS) {
      request.ns.lora_name = read_string(value, "lora_name");
    }
    if (body.at_key("cache_salt").get(value) == simdjson::SUCCESS) {
      request.ns.cache_salt = read_string(value, "cache_salt");
    }
    const simdjson::dom::array list = read_array(tokens_value, "tokens");
    request.tokens.reserve(list.size());
    size_t i = 0;
    for (const element t : list) {
      int64_t id = 0;
      if (!is_integer(t)) {
        bad("tokens[" + std::to_string(i) + "]", "expected an integer, got " + shown(t));
      }
      if (t.get_int64().get(id) != simdjson::SUCCESS || id < std::numeric_limits<TokenId>::min() ||
          id > std::numeric_limits<TokenId>::max()) {
        bad("tokens[" + std::to_string(i) + "]", shown(t) + " is not a 32-bit token id");
      }
      request.tokens.push_back(static_cast<TokenId>(id));
      ++i;
    }
  } else {
    const simdjson::dom::array list = read_array(hashes_value, "block_hashes");
    request.by_hashes = true;
    request.block_hashes.reserve(list.size());
    size_t i = 0;
    for (const element h : list) {
      request.block_hashes.push_back(read_hash(h, "block_hashes[" + std::to_string(i++) + "]"));
    }
  }
  query.candidates = read_candidates(body);
  return query;
}

ObserveQuery parse_observe_request(std::string_view body_text) {
  const simdjson::dom::object body = parse_body(body_text);
  ObserveQuery query;
  element value;
  if (body.at_key("route_id").get(value) != simdjson::SUCCESS) {
    bad("route_id", "missing: give the route_id of the /route answer");
  }
  query.route_id = read_string(value, "route_id");
  if (query.route_id.empty() || query.route_id.size() > kMaxRouteIdBytes) {
    bad("route_id", "not a route id (" + std::to_string(query.route_id.size()) + " bytes)");
  }
  if (body.at_key("hit_tokens").get(value) != simdjson::SUCCESS) {
    bad("hit_tokens", "missing: give the tokens the engine reused");
  }
  query.hit_tokens = read_uint(value, "hit_tokens", std::numeric_limits<uint32_t>::max());
  if (body.at_key("worker").get(value) == simdjson::SUCCESS) {
    query.worker = read_string(value, "worker");
    if (query.worker.empty()) bad("worker", "empty: leave it out, or name the worker");
  }
  return query;
}

std::string render_observation(std::string_view route_id, std::string_view worker,
                               uint64_t predicted_hit_tokens, uint64_t hit_tokens) {
  return dump({{"route_id", route_id},
               {"worker", worker},
               {"predicted_hit_tokens", predicted_hit_tokens},
               {"hit_tokens", hit_tokens}});
}

std::string render_route_decision(const RouteDecision& decision, std::string_view route_id,
                                  uint64_t predicted_hit_tokens) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const CandidateScore& c : decision.candidates) {
    candidates.push_back({{"worker", c.worker},
                          {"known", c.known},
                          {"overlap_blocks", c.overlap_blocks},
                          {"weighted_overlap_blocks", c.weighted_overlap_blocks},
                          {"load", c.load},
                          {"prefill_blocks", c.prefill_blocks},
                          {"score", c.score}});
  }
  const nlohmann::json out = {{"worker", decision.candidates.at(decision.chosen).worker},
                              {"outcome", to_string(decision.outcome)},
                              {"request_blocks", decision.request_blocks},
                              {"route_id", route_id},
                              {"predicted_hit_tokens", predicted_hit_tokens},
                              {"candidates", std::move(candidates)}};
  return dump(out);
}

std::string render_holdings(const std::string& worker, const std::vector<BlockHolding>& blocks) {
  nlohmann::json list = nlohmann::json::array();
  for (const BlockHolding& b : blocks) list.push_back({{"hash", b.hash}, {"mediums", b.mediums}});
  return dump({{"worker", worker}, {"pages", blocks.size()}, {"blocks", std::move(list)}});
}

std::string render_error(std::string_view message) { return dump({{"error", message}}); }

}  // namespace radixkv::router
