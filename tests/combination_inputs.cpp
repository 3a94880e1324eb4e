#include "tests/combination_inputs.h"

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/child_process.h"
#include "tests/redis_fixture.h"

namespace radixkv::testing {

namespace {

using Json = nlohmann::json;

const std::string kSampleTraces = RADIXKV_SAMPLE_TRACES;

// The Mooncake sample's requests whose first block leads at least 20 requests, up to 8,192 tokens
// each: 45 requests of up to 4,429 tokens that share prefixes (the first few hundred lines of the
// sample share almost none).
std::vector<Json> mooncake_requests() {
  std::ifstream in(kSampleTraces + "/mooncake/synthetic_trace.jsonl");
  std::vector<Json> all;
  std::map<uint64_t, int> leading;
  for (std::string line; std::getline(in, line);) {
    all.push_back(Json::parse(line));
    ++leading[all.back()["hash_ids"][0].get<uint64_t>()];
  }
  std::vector<Json> kept;
  for (const Json& r : all) {
    if (leading[r["hash_ids"][0].get<uint64_t>()] >= 20 && r["input_length"] <= 8192) {
      kept.push_back(r);
    }
  }
  return kept;
}

// The same requests in blocks of `block_tokens` (a divisor of 512): block id b of length n
// becomes ids b * k, b * k + 1, ... for its ceil(n / block_tokens) sub-blocks, k = 512 /
// block_tokens. Equal blocks stay equal and distinct ones distinct, so a cache whose page divides
// the block sees the same prefixes: the replay must give the same figures.
std::vector<Json> in_blocks(std::vector<Json> requests, uint64_t block_tokens) {
  const uint64_t k = 512 / block_tokens;
  for (Json& r : requests) {
    const uint64_t length = r["input_length"];
    Json ids = Json::array();
    const Json& blocks = r["hash_ids"];
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const uint64_t n = std::min<uint64_t>(512, length - 512 * i);
      for (uint64_t j = 0; j < (n + block_tokens - 1) / block_tokens; ++j) {
        ids.push_back(blocks[i].get<uint64_t>() * k + j);
      }
    }
    r["hash_ids"] = std::move(ids);
  }
  return requests;
}

// The sample session that starts two sub-agents on a second model (2.25 M input tokens), every
// request keeping one block in `keep` (the first, the (keep + 1)-th, ...): prefixes shared before
// stay shared (a common prefix of n blocks becomes one of ceil(n / keep)), prompts shrink `keep`
// times, and the sub-agents and their model stay.
Json sparse_session(uint64_t keep) {
  std::ifstream in(kSampleTraces + "/agentic-coding/trace_0291.json");
  Json session = Json::parse(in);
  const uint64_t block = session["block_size"];
  const auto thin = [&](auto& self, Json& requests) -> void {
    for (Json& r : requests) {
      if (r.contains("requests")) {
        self(self, r["requests"]);
        continue;
      }
      Json ids = Json::array();
      for (std::size_t i = 0; i < r["hash_ids"].size(); i += keep) ids.push_back(r["hash_ids"][i]);
      r["in"] = block * ids.size();
      r["hash_ids"] = std::move(ids);
    }
  };
  thin(thin, session["requests"]);
  session.erase("totals");
  return session;
}

void write_jsonl(const std::string& path, const std::vector<Json>& records) {
  std::ofstream out(path);
  for (const Json& r : records) out << r.dump() << '\n';
}

// The traces of the table's workloads, written once per process.
const std::map<std::string, std::string>& traces() {
  static const std::map<std::string, std::string> files = [] {
    std::map<std::string, std::string> t;
    t["chats"] = scratch_path("chats.jsonl");
    ChildProcess gen({combination_binary(), "gen", "--conversations", "10", "--priorities",
                      "10,35,90", "--seed", "11", "--out", t["chats"]});
    if (gen.wait(std::chrono::seconds(120)) != 0) throw std::runtime_error("radixkv gen failed");
    t["subagents"] = scratch_path("subagents.json");
    std::ofstream(t["subagents"]) << sparse_session(8).dump();
    const std::vector<Json> mooncake = mooncake_requests();
    t["mooncake"] = scratch_path("mooncake.jsonl");
    write_jsonl(t["mooncake"], mooncake);
    t["mooncake@64"] = scratch_path("mooncake-64.jsonl");
    write_jsonl(t["mooncake@64"], in_blocks(mooncake, 64));
    return t;
  }();
  return files;
}

}  // namespace

std::string combination_binary() {
  const std::string other = env_or_empty("RADIXKV_COMBINATIONS_BINARY");
  return other.empty() ? std::string(RADIXKV_BINARY) : other;
}

unsigned combination_jobs() {
  const std::string given = env_or_empty("RADIXKV_COMBINATIONS_JOBS");
  return given.empty() ? std::thread::hardware_concurrency() + 1
                       : static_cast<unsigned>(std::stoul(given));
}

std::string replay_help() {
  ChildProcess help({"/bin/sh", "-c", "exec \"$0\" replay --help 2>&1", combination_binary()});
  std::string text;
  while (auto line = help.read_line(std::chrono::seconds(60))) text += *line + "\n";
  if (help.wait(std::chrono::seconds(10)) != 0)
    throw std::runtime_error("radixkv replay --help failed");
  return text;
}

CombinationContext combination_context(std::string redis, std::string cluster) {
  return {traces(), std::move(redis), std::move(cluster),
          replay_help().find("--remote-wait-writes") != std::string::npos};
}

}  // namespace radixkv::testing
