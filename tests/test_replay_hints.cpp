// Retention in cache mode: a native trace's "retain" ranges and --hints online's session holds,
// worked out page by page against the runs without them.
#include <doctest/doctest.h>

#include <string>

#include "tools/replay/cache_replay.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

// Pages of 4 tokens, room for 3.
ReplayResult replay(const std::string& text, bool hints_online) {
  const Trace trace = parse_native(text, "t");
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 1, 2, 4};
  config.model = "test";
  config.capacity_pages = 3;
  config.hints_online = hints_online;
  const ReplayResult result = replay_cache(trace, config);
  CHECK(result.pages_leaked == 0);
  CHECK(result.accounting_error == "");
  return result;
}

}  // namespace

TEST_CASE("cache mode: a retained range keeps its page where LRU evicts it") {
  //   r0: A (1 page), kept at 90 for ever when "retain" is there. r1: C (1 page).
  //   r2: B (2 pages): 1 page free, one to evict from A and C. LRU: A, the oldest. Retained:
  //       A is protected (1 of 2 evictable pages, within half), so C goes.
  //   r3: A again: hit 4 tokens when retained, 0 when not.
  const std::string plain = R"({"id": 0, "t": 0, "segs": [[1, 4]]}
{"id": 1, "t": 1, "segs": [[2, 4]]}
{"id": 2, "t": 2, "segs": [[3, 8]]}
{"id": 3, "t": 3, "segs": [[1, 4]]})";
  std::string retained = plain;
  retained.replace(retained.find("[[1, 4]]}"), 9, R"([[1, 4]], "retain": [[0, 4, 90]]})");
  CHECK(replay(plain, false).hit_tokens == 0);
  CHECK(replay(retained, false).hit_tokens == 4);
  // A range that lapsed (at 0.5 s) before r1 keeps nothing. The layer's clock is the latest access
  // it has seen (eviction/retention_layer.h): r1's insert at t 1 tells it.
  const auto lasting = [&](const char* seconds) {
    std::string text = plain;
    text.replace(text.find("[[1, 4]]}"), 9,
                 std::string(R"([[1, 4]], "retain": [[0, 4, 90, )") + seconds + "]]}");
    return text;
  };
  CHECK(replay(lasting("0.5"), false).hit_tokens == 0);
  // One that lapses at 1.5 s, between r1 and r2, still holds at r2's eviction: r2 matches nothing,
  // so no access tells the layer it is t 2 before its pages are allocated.
  CHECK(replay(lasting("1.5"), false).hit_tokens == 4);
}

TEST_CASE("cache mode: --hints online holds a session's path for the gap it has shown") {
  //   r0 (t 0, session 1): X. Its first request: no gap known anywhere, no hold.
  //   r1 (t 1, session 1): A. Gap 1 s: held for 1.25 s, until 2.25.
  //   r2 (t 1.5, no session): C. The cache holds X, A, C: full.
  //   r3 (t 2, no session): B, 2 pages to evict. LRU: X, then A. Held: X, then C (A's one page
  //       of two evictable ones is within half).
  //   r4 (t 2.1, session 1): A again: hit 4 tokens with the hold, 0 without.
  const std::string trace = R"({"id": 0, "t": 0, "segs": [[9, 4]], "conv": 1}
{"id": 1, "t": 1, "segs": [[1, 4]], "conv": 1}
{"id": 2, "t": 1.5, "segs": [[2, 4]]}
{"id": 3, "t": 2, "segs": [[3, 8]]}
{"id": 4, "t": 2.1, "segs": [[1, 4]], "conv": 1})";
  CHECK(replay(trace, false).hit_tokens == 0);
  const ReplayResult held = replay(trace, true);
  CHECK(held.hit_tokens == 4);
  CHECK(held.policy == "lru+hints");
  // C at 2.3 s, past the hold's end (2.25): its insert tells the layer the time, and B at 2.35
  // evicts in LRU's order again (X, then A).
  std::string late = trace;
  late.replace(late.find("\"t\": 1.5"), 8, "\"t\": 2.3");
  late.replace(late.find("\"t\": 2,"), 7, "\"t\": 2.35,");
  late.replace(late.find("\"t\": 2.1"), 8, "\"t\": 2.4");
  CHECK(replay(late, true).hit_tokens == 0);
}
