// The exclusive two-tier LRU hierarchy (write-back, LRU on both tiers), driven through the radix
// tree in cache-mode semantics, against one LRU cache as large as both tiers together (the
// cache-mode oracle of tests/replay_oracle.h, itself checked against cache mode).
//
// Per request, as cache mode does with one tier: match (device run, then host run), lock, get
// device pages for the host run and for the request's new pages (evicting device pages to the
// host, the host evicting its LRU leaf tails), load the host run, insert the new pages in order,
// unlock. Every request's pages fit on the device.
//
// What holds, and why (docs/tiers.md, "An exclusive LRU hierarchy"):
//   - Every page's time is that of the last request that held it, whatever the capacities, so one
//     LRU cache of C pages holds the C most recent pages. The hierarchy only ever drops the least
//     recent page it holds (the host's LRU leaf tail: host pages only arrive from the device's
//     least recent end, and a hit moves a page to the device), so it too holds the N most recent
//     pages for its current size N.
//   - N = D + H whenever the host pool has room beyond its budget for the largest host run a
//     request loads: then the pages being loaded leave the host's budget before the device
//     evicts to make room for them, and the hierarchy caches exactly what one LRU cache of D + H
//     pages caches, request by request.
//   - With no such room, the host must drop pages the single cache keeps while a load still holds
//     its source pages: N dips to D + H - h, h the host run being loaded, and recovers as new
//     pages arrive. So per request, hits(LRU of D + H - h_max) <= hits <= hits(LRU of D + H).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "radix/radix_tree.h"
#include "tests/replay_oracle.h"
#include "tests/small_traces.h"

using namespace radixkv;
using radixkv::testing::oracle_replay;
using radixkv::testing::OracleKey;
using radixkv::testing::OracleResult;

namespace {

struct TwoTierRun {
  std::vector<uint64_t> request_hits;
  uint64_t hit_tokens = 0, host_hit_tokens = 0;
  uint32_t max_host_run = 0;  // the most pages one request loaded from the host
  std::set<PageHash> final_pages;
  TreeStats stats;
};

uint32_t max_request_pages(const tools::Trace& trace, uint32_t page_tokens) {
  uint32_t most = 0;
  for (const tools::TraceRequest& r : trace.requests) {
    most = std::max(most, r.input_tokens / page_tokens);
  }
  return most;
}

TwoTierRun replay_two_tier(const tools::Trace& trace, uint32_t page_tokens, uint32_t device_pages,
                           uint32_t host_pages, uint32_t host_pool_room) {
  const KvLayout layout{1, 1, 1, 2, page_tokens};
  PagePool device(layout, device_pages);
  PagePool host(layout, host_pages + host_pool_room);
  const std::unique_ptr<PageCopier> copier = make_page_copier(device, host);  // instant
  RadixTree tree(device, make_policy("lru"));
  HostTierSetup setup;
  setup.pool = &host;
  setup.copier = copier.get();
  setup.policy = make_policy("lru");
  setup.limit_pages = host_pages;
  tree.add_host_tier(std::move(setup));
  tree.enable_page_hashes();

  TwoTierRun run;
  tools::TokenExpander expander(trace);
  std::vector<PageId> fresh;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const std::span<const TokenId> tokens = expander.expand(i);
    const uint32_t full = static_cast<uint32_t>(tokens.size() / page_tokens);
    const MatchResult m = tree.match(trace.requests[i].ns, tokens);
    tree.lock(m.node);
    const uint32_t matched = m.tokens / page_tokens;
    const uint32_t host_run = m.host_tokens() / page_tokens;
    const uint32_t need = host_run + (full - matched);
    if (device.free_pages() < need) tree.evict_pages(need - device.free_pages());
    fresh.clear();
    REQUIRE(device.allocate(need, fresh));  // every request fits on the device
    tree.load(m.node, std::span<const PageId>(fresh).first(host_run));
    if (full > matched) {
      const InsertResult r =
          tree.insert_below(m.node, tokens.subspan(size_t{matched} * page_tokens),
                            std::span<const PageId>(fresh).subspan(host_run));
      REQUIRE(r.cached_tokens == 0);
    }
    device.release(fresh);
    tree.unlock(m.node);
    run.request_hits.push_back(m.tokens);
    run.hit_tokens += m.tokens;
    run.host_hit_tokens += m.host_tokens();
    run.max_host_run = std::max(run.max_host_run, host_run);
  }
  tree.verify();
  for (Tier tier : {Tier::kDevice, Tier::kHost}) {
    for (const PageHash& hash : tree.tier_page_hashes(tier)) run.final_pages.insert(hash);
  }
  run.stats = tree.stats();
  return run;
}

// The page hashes of the oracle's cached pages, to compare page sets with the tree's.
std::set<PageHash> hashes_of(const std::set<OracleKey>& pages, uint32_t page_tokens) {
  std::set<PageHash> hashes;
  for (const auto& [ns, prefix] : pages) {
    PageHash hash = namespace_seed(ns);
    for (size_t p = 0; p < prefix.size(); p += page_tokens) {
      hash = chain_page_hash(hash, std::span<const TokenId>(prefix).subspan(p, page_tokens));
    }
    hashes.insert(hash);
  }
  return hashes;
}

struct Totals {
  uint64_t runs = 0, host_hit_tokens = 0, host_evicted_pages = 0, differing_requests = 0;
};

// Runs the hierarchy against the single-tier oracle at (D, H) for each device size in `devices`
// (given as pages beyond the largest request) and host size in `hosts`.
void compare(const tools::Trace& trace, uint32_t page_tokens, bool room_for_loads, Totals& totals) {
  const uint32_t largest = max_request_pages(trace, page_tokens);
  for (uint32_t extra_device : {0u, 3u, 20u}) {
    for (uint32_t host_pages : {1u, 5u, 30u, 200u}) {
      const uint32_t device_pages = largest + extra_device;
      CAPTURE(page_tokens);
      CAPTURE(device_pages);
      CAPTURE(host_pages);
      const TwoTierRun got = replay_two_tier(trace, page_tokens, device_pages, host_pages,
                                             room_for_loads ? largest : 0);
      const OracleResult one =
          oracle_replay(trace, page_tokens, device_pages + host_pages, /*fifo=*/false);
      REQUIRE(got.request_hits.size() == one.request_hits.size());
      ++totals.runs;
      totals.host_hit_tokens += got.host_hit_tokens;
      totals.host_evicted_pages += got.stats.host_evicted_pages;
      if (room_for_loads) {
        CHECK(got.request_hits == one.request_hits);
        CHECK(got.hit_tokens == one.hit_tokens);
        CHECK(got.final_pages == hashes_of(one.final_pages, page_tokens));
        continue;
      }
      const uint64_t smaller = device_pages + host_pages - got.max_host_run;
      const OracleResult low = oracle_replay(trace, page_tokens, smaller, false);
      for (size_t i = 0; i < got.request_hits.size(); ++i) {
        CAPTURE(i);
        CHECK(low.request_hits[i] <= got.request_hits[i]);
        CHECK(got.request_hits[i] <= one.request_hits[i]);
        totals.differing_requests += got.request_hits[i] != one.request_hits[i] ? 1 : 0;
      }
    }
  }
}

std::vector<tools::Trace> traces() {
  std::vector<tools::Trace> all;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    tools::GenConfig config = radixkv::testing::small_gen_config(seed);
    config.conversations = 30;
    config.system_prompts = 4;
    config.namespaces = 1 + seed % 2;
    all.push_back(radixkv::testing::generated_trace(config));
  }
  return all;
}

}  // namespace

TEST_CASE("two-tier LRU with room for a load caches exactly what one LRU of both sizes does") {
  Totals totals;
  for (const tools::Trace& trace : traces()) {
    for (uint32_t page_tokens : {1u, 3u, 8u}) compare(trace, page_tokens, true, totals);
  }
  compare(radixkv::testing::random_block_trace(42, 120), 512, true, totals);
  compare(radixkv::testing::random_block_trace(43, 120), 128, true, totals);
  // The runs went through both tiers: loads from the host and evictions from it.
  CHECK(totals.host_hit_tokens > 0);
  CHECK(totals.host_evicted_pages > 0);
  MESSAGE(totals.runs, " runs equal request by request; ", totals.host_hit_tokens,
          " tokens loaded from the host, ", totals.host_evicted_pages, " host pages evicted");
}

TEST_CASE(
    "two-tier LRU without that room stays between one LRU of both sizes and one a load less") {
  Totals totals;
  for (const tools::Trace& trace : traces()) {
    for (uint32_t page_tokens : {1u, 3u, 8u}) compare(trace, page_tokens, false, totals);
  }
  compare(radixkv::testing::random_block_trace(42, 120), 512, false, totals);
  CHECK(totals.host_hit_tokens > 0);
  // The bound is not idle: some requests do hit less than in the single cache.
  CHECK(totals.differing_requests > 0);
  MESSAGE(totals.runs, " runs within the bound; ", totals.differing_requests,
          " requests hit less than in one LRU cache of both sizes");
}
