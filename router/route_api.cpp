#include "router/route_api.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "events/block_hash.h"

namespace radixkv::router {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw RouteRequestError(field + ": " + why);
}

uint64_t read_uint(const json& value, const std::string& field, uint64_t max) {
  if (!value.is_number_unsigned()) {  // nlohmann parses every integer >= 0 as unsigned
    bad(field, "expected an integer >= 0, got " + value.dump());
  }
  const uint64_t v = value.get<uint64_t>();
  if (v > max) bad(field, std::to_string(v) + " is larger than " + std::to_string(max));
  return v;
}

const json& array_field(const json& body, const char* name) {
  const json& value = body.at(name);
  if (!value.is_array()) bad(name, "expected an array, got " + std::string(value.type_name()));
  return value;
}

std::vector<Candidate> read_candidates(const json& body) {
  std::vector<Candidate> candidates;
  if (!body.contains("candidates")) return candidates;
  const json& list = array_field(body, "candidates");
  if (list.empty()) bad("candidates", "empty: leave it out to route among every worker");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = "candidates[" + std::to_string(i) + "]";
    const json& c = list[i];
    if (!c.is_object()) bad(at, "expected an object, got " + c.dump());
    if (!c.contains("worker") || !c["worker"].is_string() ||
        c["worker"].get<std::string>().empty()) {
      bad(at + ".worker", "expected a worker name");
    }
    Candidate candidate{c["worker"].get<std::string>(), 0};
    if (c.contains("load")) {
      const json& load = c["load"];
      if (!load.is_number() || load.get<double>() < 0) {
        bad(at + ".load", "expected a number >= 0, got " + load.dump());
      }
      candidate.load = load.get<double>();
    }
    candidates.push_back(std::move(candidate));
  }
  return candidates;
}

}  // namespace

RouteQuery parse_route_request(std::string_view body_text) {
  json body;
  try {
    body = json::parse(body_text);
  } catch (const json::parse_error& e) {
    throw RouteRequestError(std::string("body: not JSON (") + e.what() + ")");
  }
  if (!body.is_object()) bad("body", "expected a JSON object");
  const bool has_tokens = body.contains("tokens");
  if (has_tokens == body.contains("block_hashes")) {
    bad("body", "give exactly one of \"tokens\" (with \"page_size\") or \"block_hashes\"");
  }
  RouteQuery query;
  if (has_tokens) {
    if (!body.contains("page_size")) bad("page_size", "required with \"tokens\"");
    const auto page = static_cast<uint32_t>(
        read_uint(body["page_size"], "page_size", std::numeric_limits<uint32_t>::max()));
    if (page == 0) bad("page_size", "must be at least 1");
    const Namespace ns =
        body.contains("namespace")
            ? read_uint(body["namespace"], "namespace", std::numeric_limits<uint64_t>::max())
            : 0;
    const json& list = array_field(body, "tokens");
    std::vector<TokenId> tokens;
    tokens.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const json& t = list[i];
      const std::string at = "tokens[" + std::to_string(i) + "]";
      if (!t.is_number_integer()) bad(at, "expected an integer, got " + t.dump());
      const bool fits = t.is_number_unsigned()
                            ? t.get<uint64_t>() <= std::numeric_limits<TokenId>::max()
                            : t.get<int64_t>() >= std::numeric_limits<TokenId>::min();
      if (!fits) bad(at, t.dump() + " is not a 32-bit token id");
      tokens.push_back(static_cast<TokenId>(t.get<int64_t>()));
    }
    query.hashes = events::prefix_block_hashes(ns, tokens, page);
    query.request_blocks = static_cast<double>(tokens.size()) / page;
  } else {
    const json& list = array_field(body, "block_hashes");
    for (size_t i = 0; i < list.size(); ++i) {
      query.hashes.push_back(read_uint(list[i], "block_hashes[" + std::to_string(i) + "]",
                                       std::numeric_limits<uint64_t>::max()));
    }
    query.request_blocks = static_cast<double>(query.hashes.size());
  }
  query.candidates = read_candidates(body);
  return query;
}

std::string render_route_decision(const RouteDecision& decision) {
  json candidates = json::array();
  for (const CandidateScore& c : decision.candidates) {
    candidates.push_back({{"worker", c.worker},
                          {"known", c.known},
                          {"overlap_blocks", c.overlap_blocks},
                          {"load", c.load},
                          {"prefill_blocks", c.prefill_blocks},
                          {"score", c.score}});
  }
  const json out = {{"worker", decision.candidates.at(decision.chosen).worker},
                    {"outcome", to_string(decision.outcome)},
                    {"request_blocks", decision.request_blocks},
                    {"candidates", std::move(candidates)}};
  return out.dump();
}

std::string render_holdings(const std::string& worker, const std::vector<BlockHolding>& blocks) {
  json list = json::array();
  for (const BlockHolding& b : blocks) list.push_back({{"hash", b.hash}, {"mediums", b.mediums}});
  return json{{"worker", worker}, {"pages", blocks.size()}, {"blocks", std::move(list)}}.dump();
}

std::string render_error(std::string_view message) { return json{{"error", message}}.dump(); }

}  // namespace radixkv::router
