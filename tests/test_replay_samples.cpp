// Cache-mode replay of the sample traces against an independent page-level model.
//
// The model reads the files with nlohmann-json (not the readers' simdjson code), flattens
// sub-agents onto the session clock itself, and turns every request into the keys of its full
// pages: a page is named by its file, its model, its position and the hash ids of every block up
// to the one it ends in, so equal keys mean equal tokens and an equal prefix; pages past the
// hash-id blocks (an agentic prompt's unique tail) get keys of their own. Then LRU over a list of
// pages, most recent first: a request's matched pages move to the front (deepest last, so that
// among pages touched together the deepest goes first, as the tree evicts a leaf's tail), its new
// pages follow them, and a full cache evicts from the back, skipping the request's own pages.
// With watermarks, after each request the back of the list is evicted down to the low watermark
// whenever the cache holds more than the high one. Nothing here knows the radix tree: hit tokens,
// evictions and pages left uncached must still match the replay exactly, at every capacity,
// page size and pair of watermarks.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <list>
#include <map>

#include "tests/sample_traces.h"
#include "tests/small_traces.h"
#include "tools/replay/cache_replay.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;
using radixkv::testing::sample_trace;
using Json = nlohmann::json;

namespace {

// One request as the model sees it.
struct ModelRequest {
  double t = 0;
  uint64_t input = 0;
  std::vector<uint64_t> ids;  // hash ids of its blocks
  uint64_t block_tokens = 0;
  bool ids_cover_input = false;  // hash-id formats: the last (partial) block has an id too
  uint64_t scope = 0;            // which ids mean the same block: a file, and a model
};

using PageKey = std::vector<uint64_t>;

// The keys of the request's full pages of `page_tokens`.
std::vector<PageKey> page_keys(const ModelRequest& r, uint64_t page_tokens, uint64_t unique_id) {
  std::vector<PageKey> keys;
  const uint64_t covered =
      r.ids_cover_input ? r.input : r.ids.size() * r.block_tokens;  // tokens the ids name
  for (uint64_t p = 0; p < r.input / page_tokens; ++p) {
    const uint64_t end = (p + 1) * page_tokens;  // the page is tokens [end - page_tokens, end)
    if (end > covered) {
      keys.push_back({~uint64_t{0}, unique_id, p});  // no other request has these tokens
      continue;
    }
    PageKey key{r.scope, p};
    const uint64_t last_block = (end - 1) / r.block_tokens;
    key.insert(key.end(), r.ids.begin(),
               r.ids.begin() + static_cast<std::ptrdiff_t>(last_block + 1));
    keys.push_back(std::move(key));
  }
  return keys;
}

struct ModelResult {
  uint64_t hit_tokens = 0, evicted_pages = 0, uncached_pages = 0;
};

// Watermarks in pages, as eviction/cache_budget.h documents them: high = max(1, floor(capacity x
// high fraction)), low = min(high, floor(capacity x low fraction)).
struct ModelWatermarks {
  uint64_t high = ~uint64_t{0};
  uint64_t low = ~uint64_t{0};
};

ModelWatermarks watermark_pages(uint64_t capacity, double high, double low) {
  const auto scaled = [&](double f) {
    return static_cast<uint64_t>(std::floor(static_cast<double>(capacity) * f));
  };
  const uint64_t high_pages = std::max<uint64_t>(1, scaled(high));
  return {high_pages, std::min(high_pages, scaled(low))};
}

ModelResult lru_model(const std::vector<std::vector<PageKey>>& requests, uint64_t page_tokens,
                      uint64_t capacity, ModelWatermarks watermarks = {}) {
  std::list<PageKey> recency;  // most recent first
  std::map<PageKey, std::list<PageKey>::iterator> where;
  std::map<PageKey, uint64_t> children;  // cached pages one position deeper on the same prefix
  std::map<PageKey, PageKey> parent;  // the page before it on its prefix, for a page past the first
  ModelResult result;
  // Evicts the page `victim` points at (a leaf: every page sits behind its parent).
  const auto evict = [&](std::list<PageKey>::iterator victim) {
    REQUIRE_MESSAGE(children[*victim] == 0, "the model evicted a page with cached children");
    if (const auto up = parent.find(*victim); up != parent.end()) {
      --children[up->second];
      parent.erase(up);
    }
    where.erase(*victim);
    recency.erase(victim);
    ++result.evicted_pages;
  };
  for (const std::vector<PageKey>& keys : requests) {
    std::size_t m = 0;
    while (m < keys.size() && where.contains(keys[m])) ++m;
    result.hit_tokens += m * page_tokens;
    // Matched pages to the front, the first one frontmost.
    for (std::size_t p = m; p-- > 0;) recency.splice(recency.begin(), recency, where[keys[p]]);
    auto after = recency.begin();  // new pages go right behind the request's deepest page so far
    if (m > 0) std::advance(after, m);
    std::size_t p = m;
    for (; p < keys.size(); ++p) {
      if (where.size() == capacity) {
        // The least recent page that is not this request's own.
        auto victim = recency.end();
        for (auto it = recency.end(); it != recency.begin();) {
          --it;
          if (std::find(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(p), *it) ==
              keys.begin() + static_cast<std::ptrdiff_t>(p)) {
            victim = it;
            break;
          }
        }
        if (victim == recency.end()) break;  // nothing evictable: the rest is not cached
        if (victim == after) ++after;
        evict(victim);
      }
      where[keys[p]] = recency.insert(after, keys[p]);
      if (p > 0) {
        ++children[keys[p - 1]];
        parent[keys[p]] = keys[p - 1];
      }
    }
    result.uncached_pages += keys.size() - p;
    // The request is over (nothing of it locked): down to the low watermark past the high one.
    if (where.size() > watermarks.high) {
      while (where.size() > watermarks.low) evict(std::prev(recency.end()));
    }
  }
  return result;
}

std::vector<std::vector<PageKey>> keys_of(const std::vector<ModelRequest>& requests,
                                          uint64_t page_tokens) {
  std::vector<std::vector<PageKey>> keys;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    keys.push_back(page_keys(requests[i], page_tokens, i));
  }
  return keys;
}

// Keys of any trace's pages from its expanded tokens: the namespace and every token up to the
// page's end (what the existing oracle of test_replay_oracle.cpp keys on).
std::vector<std::vector<PageKey>> keys_of(const Trace& trace, uint64_t page_tokens) {
  std::vector<std::vector<PageKey>> keys(trace.requests.size());
  TokenExpander expander(trace);
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const auto tokens = expander.expand(i);
    PageKey key{trace.requests[i].ns};
    for (std::size_t p = 0; p < tokens.size() / page_tokens; ++p) {
      key.insert(key.end(), tokens.begin() + static_cast<std::ptrdiff_t>(p * page_tokens),
                 tokens.begin() + static_cast<std::ptrdiff_t>((p + 1) * page_tokens));
      keys[i].push_back(key);
    }
  }
  return keys;
}

// Agentic sessions with nlohmann-json: one file, or every .json file of a folder by name.
void flatten(const Json& entries, double offset, uint64_t file, uint64_t block_size,
             std::map<std::string, uint64_t>& models, std::vector<ModelRequest>& out) {
  for (const Json& entry : entries) {
    const double t = offset + entry.at("t").get<double>();
    if (entry.value("type", "") == "subagent") {
      flatten(entry.at("requests"), t, file, block_size, models, out);
      continue;
    }
    const std::string model = entry.value("model", "");
    const uint64_t model_id = models.emplace(model, models.size()).first->second;
    ModelRequest r;
    r.t = t;
    r.input = entry.at("in").get<uint64_t>();
    r.ids = entry.at("hash_ids").get<std::vector<uint64_t>>();
    r.block_tokens = block_size;
    r.scope = file << 32 | model_id;
    out.push_back(std::move(r));
  }
}

std::vector<ModelRequest> agentic_model(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(path)) {
    for (const auto& e : std::filesystem::directory_iterator(path)) {
      if (e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  std::vector<ModelRequest> requests;
  std::map<std::string, uint64_t> models;
  for (uint64_t f = 0; f < files.size(); ++f) {
    const Json session = Json::parse(std::ifstream(files[f]));
    flatten(session.at("requests"), 0, f, session.at("block_size").get<uint64_t>(), models,
            requests);
  }
  std::stable_sort(requests.begin(), requests.end(),
                   [](const ModelRequest& a, const ModelRequest& b) { return a.t < b.t; });
  return requests;
}

std::vector<ModelRequest> bailian_model(const std::filesystem::path& path) {
  std::vector<ModelRequest> requests;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const Json record = Json::parse(line);
    ModelRequest r;
    r.input = record.at("input_length").get<uint64_t>();
    r.ids = record.at("hash_ids").get<std::vector<uint64_t>>();
    r.block_tokens = 16;
    r.ids_cover_input = true;
    requests.push_back(std::move(r));
  }
  return requests;
}

void check_against_model(const Trace& trace, const std::vector<std::vector<PageKey>>& keys,
                         uint64_t page_tokens, uint64_t capacity, double high = 1.0,
                         double low = 1.0) {
  CAPTURE(page_tokens);
  CAPTURE(capacity);
  CAPTURE(high);
  CAPTURE(low);
  REQUIRE(trace.requests.size() == keys.size());
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 4, 2, static_cast<uint32_t>(page_tokens)};
  config.capacity_pages = capacity;
  config.high_watermark = high;
  config.low_watermark = low;
  const ReplayResult replay = replay_cache(trace, config);
  const ModelWatermarks watermarks = watermark_pages(capacity, high, low);
  const ModelResult expected = lru_model(keys, page_tokens, capacity, watermarks);
  CHECK(replay.high_watermark_pages == watermarks.high);
  CHECK(replay.low_watermark_pages == watermarks.low);
  CHECK(replay.ok());
  CHECK(replay.hit_tokens == expected.hit_tokens);
  CHECK(replay.evicted_pages == expected.evicted_pages);
  CHECK(replay.uncached_pages == expected.uncached_pages);
}

}  // namespace

TEST_CASE(
    "samples: the agentic folder, sub-agents and two models, hits what a page-level LRU model "
    "hits") {
  const std::filesystem::path folder = sample_trace("agentic-coding");
  const Trace trace = read_trace(folder);
  const std::vector<ModelRequest> model = agentic_model(folder);
  uint64_t input = 0;
  for (const ModelRequest& r : model) input += r.input;
  CHECK(trace.input_tokens() == input);
  for (uint64_t page_tokens : {16, 64}) {
    for (uint64_t capacity : {40, 400, 3000, 20000, 1000000}) {
      check_against_model(trace, keys_of(model, page_tokens), page_tokens, capacity);
    }
  }
}

TEST_CASE("samples: nested sub-agents and models in a hand-written session match the model") {
  // An agent whose sub-agent starts a sub-agent of its own, on three models, with ids shared
  // across agents of one model and repeated across models.
  const std::string session = R"({"block_size": 4, "requests": [
    {"t": 0, "model": "big", "in": 18, "out": 2, "hash_ids": [1, 2, 3, 4]},
    {"t": 10, "type": "subagent", "requests": [
      {"t": 0, "model": "small", "in": 12, "out": 1, "hash_ids": [1, 2, 3]},
      {"t": 2.5, "type": "subagent", "requests": [
        {"t": 0.25, "model": "tiny", "in": 9, "out": 1, "hash_ids": [1, 2]},
        {"t": 1, "model": "small", "in": 16, "out": 1, "hash_ids": [1, 2, 3, 9]}]},
      {"t": 4, "model": "small", "in": 13, "out": 1, "hash_ids": [1, 2, 3]}]},
    {"t": 12, "model": "big", "in": 22, "out": 2, "hash_ids": [1, 2, 3, 4, 5]},
    {"t": 13, "model": "small", "in": 8, "out": 2, "hash_ids": [1, 2]}]})";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "radixkv_samples";
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / "nested.json";
  std::ofstream(path) << session;
  const Trace trace = read_trace(path);
  REQUIRE(trace.requests.size() == 7);
  // Flattened onto the session clock (the inner sub-agent starts at 10 + 2.5), then sorted.
  std::vector<double> times;
  for (const TraceRequest& r : trace.requests) times.push_back(r.arrival_s);
  CHECK(times == std::vector<double>{0, 10, 12, 12.75, 13, 13.5, 14});
  CHECK(trace.namespace_names == std::vector<std::string>{"big", "small", "tiny"});
  const std::vector<ModelRequest> model = agentic_model(path);
  for (uint64_t page_tokens : {1, 2, 4}) {
    for (uint64_t capacity : {2, 5, 9, 100})
      check_against_model(trace, keys_of(model, page_tokens), page_tokens, capacity);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("samples: the Bailian-style sample hits what a page-level LRU model hits") {
  const std::filesystem::path path = sample_trace("bailian-style/handwritten.jsonl");
  const Trace trace = read_trace(path);
  CHECK(trace.format == TraceFormat::kBailian);
  const std::vector<ModelRequest> model = bailian_model(path);
  for (uint64_t page_tokens : {4, 16}) {
    for (uint64_t capacity : {6, 20, 45, 1000})
      check_against_model(trace, keys_of(model, page_tokens), page_tokens, capacity);
  }
}

TEST_CASE("watermarks: cache mode evicts down to low once past high, after each request") {
  // The agentic folder, and a generated trace of multi-turn chats with branches and namespaces.
  const std::filesystem::path folder = sample_trace("agentic-coding");
  const Trace agentic = read_trace(folder);
  const std::vector<ModelRequest> model = agentic_model(folder);
  GenConfig gen = radixkv::testing::small_gen_config(3);
  gen.conversations = 40;
  gen.namespaces = 2;
  const Trace generated = radixkv::testing::generated_trace(gen);
  const std::pair<double, double> pairs[] = {
      {1.0, 1.0}, {1.0, 0.5}, {0.9, 0.8}, {0.5, 0.5}, {0.3, 0.01}};
  for (const auto& [high, low] : pairs) {
    for (uint64_t capacity : {10, 300, 5000}) {
      check_against_model(agentic, keys_of(model, 64), 64, capacity, high, low);
    }
    for (uint64_t capacity : {3, 20, 90}) {
      check_against_model(generated, keys_of(generated, 2), 2, capacity, high, low);
    }
  }
}
