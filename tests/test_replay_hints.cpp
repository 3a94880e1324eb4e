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
  // A range that lapsed (at 0.5 s) before r1 keeps nothing.
  const auto lasting = [&](const char* seconds) {
    std::string text = plain;
    text.replace(text.find("[[1, 4]]}"), 9,
                 std::string(R"([[1, 4]], "retain": [[0, 4, 90, )") + seconds + "]]}");
    return text;
  };
  CHECK(replay(lasting("0.5"), false).hit_tokens == 0);
  // Nor does one that lapses at 1.5 s, between r1 and r2, although r2 matches nothing: the replay
  // sets the runtime's clock to r2's arrival (PrefixCacheRuntime::set_now), which tells the layer
  // before r2's pages are allocated. One lapsing at 2.5 s, after r2's evictions, still keeps A.
  CHECK(replay(lasting("1.5"), false).hit_tokens == 0);
  CHECK(replay(lasting("2.5"), false).hit_tokens == 4);
}

TEST_CASE("cache mode: --hints online holds a session's path for part of its mean gap") {
  //   r0 (t 0, session 1): X. Its first request: no gap known anywhere, no hold.
  //   r1 (t 1, session 1): A. Gap 1 s: held for 0.75 * 1 s, until 1.75.
  //   r2 (t 1.2, no session): C. The cache holds X, A, C: full.
  //   r3 (t 1.5, no session): B, 2 pages to evict. LRU: X, then A. Held: X, then C (A's one page
  //       of three evictable ones is within half).
  //   r4 (t 1.6, session 1): A again: hit 4 tokens with the hold, 0 without.
  const std::string trace = R"({"id": 0, "t": 0, "segs": [[9, 4]], "conv": 1}
{"id": 1, "t": 1, "segs": [[1, 4]], "conv": 1}
{"id": 2, "t": 1.2, "segs": [[2, 4]]}
{"id": 3, "t": 1.5, "segs": [[3, 8]]}
{"id": 4, "t": 1.6, "segs": [[1, 4]], "conv": 1})";
  CHECK(replay(trace, false).hit_tokens == 0);
  const ReplayResult held = replay(trace, true);
  CHECK(held.hit_tokens == 4);
  CHECK(held.policy == "lru+hints");
  // B at 1.8 s, past the hold's end (1.75), evicts in LRU's order again (X, then A), although
  // nothing B does touches the cache before its pages are allocated: its arrival sets the clock.
  std::string late = trace;
  late.replace(late.find("\"t\": 1.5"), 8, "\"t\": 1.8");
  late.replace(late.find("\"t\": 1.6"), 8, "\"t\": 1.9");
  CHECK(replay(late, true).hit_tokens == 0);
  // A gap of 4 s after one of 1 s: the hold is 0.75 times their mean (1.875 s), not the longest.
  //   r1 (t 1), A (t 5): A held until 6.875. C (t 6), B (t 6.5): within the hold, A stays.
  //   With B at 7 (past 6.875) A goes; a hold on the longest gap (4 s) would have kept it.
  std::string longer = R"({"id": 0, "t": 0, "segs": [[9, 4]], "conv": 1}
{"id": 1, "t": 1, "segs": [[8, 4]], "conv": 1}
{"id": 2, "t": 5, "segs": [[1, 4]], "conv": 1}
{"id": 3, "t": 6, "segs": [[2, 4]]}
{"id": 4, "t": 6.5, "segs": [[3, 8]]}
{"id": 5, "t": 7.1, "segs": [[1, 4]], "conv": 1})";
  CHECK(replay(longer, true).hit_tokens == 4);
  longer.replace(longer.find("\"t\": 6.5"), 8, "\"t\": 7.0");
  CHECK(replay(longer, true).hit_tokens == 0);
}

TEST_CASE("cache mode: --hints online ends a sub-agent's hold when its main agent is back") {
  //   r0 (t 0, session 1, sub-agent 1): X. No gap known: no hold.
  //   r1 (t 1, sub-agent 1): A. Gap 1 s: held until 1.75.
  //   r2 (t 1.2, session 1's main agent): M. Its first request: held for 0.75 times the median
  //       gap (1 s), until 1.95; and its sub-agent 1 is done: A's hold ends.
  //   r3 (t 1.5, no session): B, 2 pages to evict from X, A, M. M's one page of three is within
  //       half: X, then A (LRU). A at t 1.6 misses.
  //   From session 2 instead, r2 ends nothing: A and M are held, 2 pages of 3, over half: M (the
  //   later deadline) spills into LRU's order, and X, then M go. A at t 1.6 hits.
  const std::string trace = R"({"id": 0, "t": 0, "segs": [[9, 4]], "conv": 1, "agent": 1}
{"id": 1, "t": 1, "segs": [[1, 4]], "conv": 1, "agent": 1}
{"id": 2, "t": 1.2, "segs": [[2, 4]], "conv": 1}
{"id": 3, "t": 1.5, "segs": [[3, 8]]}
{"id": 4, "t": 1.6, "segs": [[1, 4]], "conv": 1, "agent": 1})";
  CHECK(replay(trace, true).hit_tokens == 0);
  std::string other = trace;
  other.replace(other.find(R"([[2, 4]], "conv": 1)"), 19, R"([[2, 4]], "conv": 2)");
  CHECK(replay(other, true).hit_tokens == 4);
}
