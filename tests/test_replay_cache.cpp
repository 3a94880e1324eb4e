// Cache-mode replay on small hand-made traces; every expected number is worked out by hand in the
// comments, from docs/design.md's cache-mode rules.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/sample_traces.h"
#include "tools/replay/cache_replay.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

ReplayResult replay(const Trace& trace, uint32_t page_tokens, uint64_t capacity_pages,
                    std::string policy = "lru") {
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 1, 2, page_tokens};
  config.model = "test";
  config.capacity_pages = capacity_pages;
  config.policy = std::move(policy);
  const ReplayResult result = replay_cache(trace, config);
  CHECK(result.pages_leaked == 0);
  CHECK(result.accounting_error == "");
  return result;
}

// Three requests, the third continuing the second's conversation: the first case works out what
// it replays to, and the capacity case replays it again.
constexpr std::string_view kThreeTurns = R"({"id": 0, "t": 0, "segs": [[1, 8]]}
{"id": 1, "t": 1, "segs": [[1, 8], [2, 6]], "out": 2}
{"id": 2, "t": 2, "parent": 1, "segs": [[3, 4]]})";

}  // namespace

TEST_CASE("cache mode: prefix reuse with no eviction") {
  // Page of 4 tokens, room for 100 pages: nothing is ever evicted.
  //   r0: content 1 (8 tokens) = 2 pages. Empty cache: hit 0; caches pages P0 P1.
  //   r1: content 1 (8) + content 2 (6) = 14 tokens, 3 full pages. P0 P1 match: hit 8.
  //       Caches its 3rd page (tokens 8..11); tokens 12..13 are a partial page, never cached.
  //   r2: r1's prompt (14) + r1's answer (2) + content 3 (4) = 20 tokens = 5 pages. The first 12
  //       tokens are cached (3 pages): hit 12. Caches pages 4 and 5.
  // input = 8 + 14 + 20 = 42, hit = 0 + 8 + 12 = 20, pages inserted = 2 + 1 + 2 = 5.
  const Trace trace = parse_native(kThreeTurns, "t");
  const ReplayResult r = replay(trace, 4, 100);
  CHECK(r.requests == 3);
  CHECK(r.input_tokens == 42);
  CHECK(r.hit_tokens == 20);
  CHECK(r.hit_rate() == doctest::Approx(20.0 / 42));
  CHECK(r.inserted_pages == 5);
  CHECK(r.evicted_pages == 0);
  CHECK(r.peak_cached_pages == 5);
  CHECK(r.final_cached_pages == 5);
}

TEST_CASE("cache mode: LRU evicts one page at a time from the tail of the oldest leaf") {
  // Page of 4 tokens, room for 3 pages. A = content 1 (8 tokens: pages A0 A1), B = content 2.
  //   1. A: hit 0. Cache A0 A1, 1 page free.
  //   2. B: hit 0. Needs 2 pages, 1 free: evict 1 from the LRU leaf (A0A1) -> A1 goes.
  //      Cache A0 | B0 B1.
  //   3. A: A0 matches, hit 4, A0 locked. Needs 1 page, none free: the only unprotected leaf is
  //      B0B1 -> B1 goes. Cache A0 A1 | B0.
  //   4. B: B0 matches, hit 4, locked. Needs 1, none free: the only unprotected leaf is A1 (the
  //      page cached in step 3, a child of A0) -> A1 goes. Cache A0 | B0 B1.
  //   5. C = content 1 (4 tokens) + content 9 (4): A0 matches, hit 4, locked. Needs 1: the only
  //      unprotected leaf is B0B1 (A0 is locked) -> B1 goes. Cache A0 C1 | B0.
  // input = 5 * 8 = 40, hit = 0 + 0 + 4 + 4 + 4 = 12, evicted pages = 4, inserted = 2+2+1+1+1.
  const Trace trace = parse_native(R"({"id": 0, "t": 0, "segs": [[1, 8]]}
{"id": 1, "t": 1, "segs": [[2, 8]]}
{"id": 2, "t": 2, "segs": [[1, 8]]}
{"id": 3, "t": 3, "segs": [[2, 8]]}
{"id": 4, "t": 4, "segs": [[1, 4], [9, 4]]})",
                                   "t");
  const ReplayResult r = replay(trace, 4, 3);
  CHECK(r.input_tokens == 40);
  CHECK(r.hit_tokens == 12);
  CHECK(r.evicted_pages == 4);
  CHECK(r.inserted_pages == 7);
  CHECK(r.uncached_pages == 0);
  CHECK(r.peak_cached_pages == 3);
  CHECK(r.final_cached_pages == 3);
}

TEST_CASE("cache mode: the least recently used leaf is chosen, not the oldest inserted") {
  // Page of 4 tokens, room for 4 pages; X, Y, Z are 8-token prompts (2 pages each).
  //   X: cache X0 X1.  Y: cache Y0 Y1 (full).  X again: full hit 8, nothing to insert.
  //   Z: needs 2, none free. LRU order of leaves: Y (step 2) is older than X (step 3):
  //      evict Y1 then Y0 (Y's leaf keeps being the victim until empty). Cache X0 X1 Z0 Z1.
  //   Y: hit 0, needs 2: LRU leaf is now X (touched in step 3) -> X1, X0 go.
  //   X: hit 0 (X was evicted). Needs 2: LRU leaf Z -> Z1, Z0 go.
  // input = 6 * 8 = 48, hit = 8, evicted = 6.
  const Trace trace = parse_native(R"({"id": 0, "t": 0, "segs": [[1, 8]]}
{"id": 1, "t": 1, "segs": [[2, 8]]}
{"id": 2, "t": 2, "segs": [[1, 8]]}
{"id": 3, "t": 3, "segs": [[3, 8]]}
{"id": 4, "t": 4, "segs": [[2, 8]]}
{"id": 5, "t": 5, "segs": [[1, 8]]})",
                                   "t");
  const ReplayResult r = replay(trace, 4, 4);
  CHECK(r.input_tokens == 48);
  CHECK(r.hit_tokens == 8);
  CHECK(r.evicted_pages == 6);
  CHECK(r.evicted_nodes == 3);
}

TEST_CASE("cache mode: when nothing is evictable the rest of the prompt is not cached") {
  // Page of 4 tokens, room for 2 pages; A = content 1, 12 tokens = 3 pages.
  //   1. A: hit 0. Needs 3, 2 free, the tree is empty: caches A0 A1, page 3 not cached.
  //   2. A: A0 A1 match (hit 8) and are locked; needs 1, none free, nothing evictable.
  // input 24, hit 8, uncached 2, evicted 0.
  const Trace trace = parse_native(R"({"id": 0, "t": 0, "segs": [[1, 12]]}
{"id": 1, "t": 1, "segs": [[1, 12]]})",
                                   "t");
  const ReplayResult r = replay(trace, 4, 2);
  CHECK(r.input_tokens == 24);
  CHECK(r.hit_tokens == 8);
  CHECK(r.uncached_pages == 2);
  CHECK(r.evicted_pages == 0);
}

TEST_CASE("cache mode: namespaces never share a prefix") {
  // Same 8 tokens in namespaces 0, 1, 0: only the third request hits (8 tokens of 24).
  const Trace trace = parse_native(R"({"id": 0, "t": 0, "ns": 0, "segs": [[1, 8]]}
{"id": 1, "t": 1, "ns": 1, "segs": [[1, 8]]}
{"id": 2, "t": 2, "ns": 0, "segs": [[1, 8]]})",
                                   "t");
  const ReplayResult r = replay(trace, 4, 100);
  CHECK(r.hit_tokens == 8);
  CHECK(r.input_tokens == 24);
}

TEST_CASE("cache mode: Mooncake blocks against a smaller page") {
  // Page of 256 tokens (half a Mooncake block), plenty of room.
  //   r0: 1000 tokens = block 7 (512) + 488 of block 8; 3 full pages (768) cached. hit 0.
  //   r1: 1024 tokens = blocks 7, 8 whole. Its first 1000 tokens equal r0's, so 3 pages (768)
  //       hit; the 4th page (768..1023) is cached.
  //   r2: 600 tokens = block 7 + 88 of block 9: block 7 = 2 pages hit (512).
  // input = 2624, hit = 768 + 512 = 1280.
  const Trace trace = parse_mooncake(
      R"({"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [7, 8]}
{"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [7, 8]}
{"timestamp": 2, "input_length": 600, "output_length": 1, "hash_ids": [7, 9]})",
      "m");
  const ReplayResult r = replay(trace, 256, 1000);
  CHECK(r.input_tokens == 2624);
  CHECK(r.hit_tokens == 1280);
}

TEST_CASE("cache mode: agentic filler tokens never hit") {
  // Page of 2, block size 4. Both requests are blocks 1, 2 plus 2 filler tokens (in = 10).
  // The second hits the 8 block tokens only: its filler is its own. input 20, hit 8.
  const Trace trace = parse_agentic(R"({"block_size": 4, "requests": [
    {"t": 0, "in": 10, "out": 1, "hash_ids": [1, 2]},
    {"t": 1, "in": 10, "out": 1, "hash_ids": [1, 2]}]})",
                                    "a");
  const ReplayResult r = replay(trace, 2, 100);
  CHECK(r.hit_tokens == 8);
  CHECK(r.input_tokens == 20);
}

TEST_CASE("cache mode: the agentic sample, worked out from its hash_ids") {
  const std::filesystem::path path =
      radixkv::testing::sample_trace("agentic-coding/trace_0026.json");
  // Request 2's hash_ids repeat request 1's 238 ids, request 3's repeat request 2's 271 ids
  // (1..238, 1..271, 1..313 in the file). With 64-token pages and room for everything, the hits
  // are exactly those blocks: (238 + 271) * 64 of 15291 + 17401 + 20068 = 52760 tokens.
  const ReplayResult r = replay(read_trace(path), 64, 10000);
  CHECK(r.hit_tokens == (238 + 271) * 64);
  CHECK(r.input_tokens == 52760);
}

TEST_CASE("cache mode: a capacity of zero pages is refused") {
  const Trace trace = parse_native(R"({"id": 0, "t": 0, "segs": [[1, 8]]})", "t");
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 1, 2, 4};
  config.capacity_pages = 0;
  CHECK_THROWS_AS(replay_cache(trace, config), std::invalid_argument);
}

TEST_CASE("cache mode: a capacity far beyond the trace replays like an unbounded cache") {
  // The first hand-made trace has 10 full pages of 4 tokens in all: a capacity of 3e9 pages is
  // replayed with a pool of 10, and must report the same as room for 100.
  const Trace trace = parse_native(kThreeTurns, "t");
  const ReplayResult small = replay(trace, 4, 100);
  const ReplayResult huge = replay(trace, 4, 3'000'000'000);
  CHECK(huge.hit_tokens == small.hit_tokens);
  CHECK(huge.inserted_pages == small.inserted_pages);
  CHECK(huge.evicted_pages == 0);
  CHECK(huge.capacity_pages == 3'000'000'000);
}
