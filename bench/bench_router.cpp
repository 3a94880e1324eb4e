// The router's index at 10^6 blocks over 8 workers (bench/router_world.h; bench/README.md, "The
// router"): events applied per second, content-keyed (the BlockStored's tokens rehashed) beside the
// same events keyed by their engine hashes alone (no tokens: what the index did before it keyed by
// content), and the match of a 4,096-token prompt, alone and with its JSON body parsed and routed.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <memory>
#include <random>
#include <string>

#include "bench/router_world.h"
#include "router/block_index.h"
#include "router/route_api.h"
#include "router/route_cost.h"

namespace radixkv::bench {
namespace {

// An index filled with the world's 10^6 blocks, kept between benchmarks of one kind (and rebuilt
// for the other: an index of opaque blocks and one of content blocks are not the same index).
struct Filled {
  explicit Filled(bool with_tokens)
      : tokens(with_tokens), world(RouterWorldOptions{}), index(world.options().blocks) {
    for (uint32_t w = 0; w < world.options().workers; ++w) index.add_worker(fmt::format("w{}", w));
    uint32_t worker = 0;
    events::BlockStored event;
    while (world.next_fill(worker, event)) {
      if (!tokens) event.token_ids.clear();
      index.apply(worker, events::KvEvent{std::move(event)});
    }
  }
  bool tokens;
  RouterWorld world;
  router::BlockIndex index;
};

Filled& filled(bool with_tokens) {
  static std::unique_ptr<Filled> built;
  if (!built || built->tokens != with_tokens) {
    built.reset();
    built = std::make_unique<Filled>(with_tokens);
  }
  return *built;
}

// Stores of a whole prompt's new blocks (192), or of one block (a decode step's), each evicting
// as many from the full index. Every event is new (a block stored again is only touched): they are
// made before the timed loop, one per iteration.
void BM_RouterApply(benchmark::State& state, bool with_tokens, bool one_block) {
  Filled& f = filled(with_tokens);
  std::mt19937_64 rng(3);
  std::vector<std::pair<uint32_t, events::KvEvent>> events;
  for (int64_t i = 0; i < state.max_iterations; ++i) {
    const uint32_t worker = static_cast<uint32_t>(rng() % f.world.options().workers);
    events::BlockStored event = f.world.churn(worker);
    if (one_block) {  // the first new block of a prompt: one block below a cached system prompt
      event.block_hashes.resize(1);
      event.token_ids = std::vector<int64_t>(
          event.token_ids.begin(), event.token_ids.begin() + f.world.options().block_tokens);
    }
    if (!with_tokens) event.token_ids.clear();
    events.emplace_back(worker, events::KvEvent{std::move(event)});
  }
  size_t i = 0, blocks = 0;
  for (auto _ : state) {
    const auto& [worker, event] = events[i++];
    f.index.apply(worker, event);
    blocks += std::get<events::BlockStored>(event).block_hashes.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["blocks_per_s"] =
      benchmark::Counter(static_cast<double>(blocks), benchmark::Counter::kIsRate);
  state.counters["index_pages"] = static_cast<double>(f.index.pages());
}

std::vector<std::vector<TokenId>> queries(Filled& f, RouterWorld::Query kind) {
  std::mt19937_64 rng(11);
  std::vector<std::vector<TokenId>> out;
  for (int i = 0; i < 64; ++i) {
    out.push_back(f.world.query(kind, static_cast<uint32_t>(i % f.world.options().workers), rng));
  }
  return out;
}

void BM_RouterMatch(benchmark::State& state, RouterWorld::Query kind) {
  Filled& f = filled(true);
  const std::vector<std::vector<TokenId>> prompts = queries(f, kind);
  size_t i = 0;
  double matched = 0;
  for (auto _ : state) {
    const std::vector<router::Overlap> o = f.index.match_tokens({}, prompts[i++ % prompts.size()]);
    for (const router::Overlap& x : o) matched += x.length;
    benchmark::DoNotOptimize(o.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["matched_tokens"] = matched / static_cast<double>(state.iterations());
}

std::vector<std::string> bodies(Filled& f, RouterWorld::Query kind) {
  std::vector<std::string> out;
  for (const std::vector<TokenId>& prompt : queries(f, kind)) {
    std::string body = R"({"page_size": 16, "tokens": [)";
    for (size_t t = 0; t < prompt.size(); ++t) {
      if (t > 0) body.push_back(',');
      body.append(std::to_string(prompt[t]));
    }
    out.push_back(body.append("]}"));
  }
  return out;
}

// POST /route's work but the socket: the JSON body of a 4,096-token prompt parsed, the candidates
// (every worker) scored, the answer written.
void BM_RouterRoute(benchmark::State& state, RouterWorld::Query kind) {
  Filled& f = filled(true);
  const std::vector<std::string> json = bodies(f, kind);
  size_t i = 0;
  for (auto _ : state) {
    const router::RouteQuery query = router::parse_route_request(json[i++ % json.size()]);
    const router::RouteDecision decision =
        router::route(f.index, query.request, query.candidates, {});
    benchmark::DoNotOptimize(router::render_route_decision(decision, "0000000000000000-1", 0));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The body's parse alone (simdjson, bounded in depth), for the share of BM_RouterRoute it takes.
void BM_RouterParse(benchmark::State& state) {
  Filled& f = filled(true);
  const std::vector<std::string> json = bodies(f, RouterWorld::Query::kCached);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(router::parse_route_request(json[i++ % json.size()]));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

using Q = RouterWorld::Query;
BENCHMARK_CAPTURE(BM_RouterApply, content / blocks : 192, true, false)->Iterations(1000);
BENCHMARK_CAPTURE(BM_RouterApply, content / blocks : 1, true, true)->Iterations(100'000);
BENCHMARK_CAPTURE(BM_RouterMatch, tokens / cached, Q::kCached)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_RouterMatch, tokens / system, Q::kSystem)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_RouterMatch, tokens / miss, Q::kMiss)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_RouterRoute, json / cached, Q::kCached)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_RouterRoute, json / system, Q::kSystem)->MinTime(0.5);
BENCHMARK(BM_RouterParse)->MinTime(0.5);
// Last: the index rebuilt without tokens.
BENCHMARK_CAPTURE(BM_RouterApply, engine_hash / blocks : 192, false, false)->Iterations(1000);
BENCHMARK_CAPTURE(BM_RouterApply, engine_hash / blocks : 1, false, true)->Iterations(100'000);

}  // namespace
}  // namespace radixkv::bench

BENCHMARK_MAIN();
