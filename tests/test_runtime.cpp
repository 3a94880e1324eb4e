// PrefixCacheRuntime without a model: reuse and the cut, chunked commits and duplicate pages,
// decode pages, memory pressure, handle lifetime and bad input, and a random operation sequence
// checked against the page accounting after every step.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>

#include "runtime/prefix_cache_runtime.h"
#include "tests/cache_fixture.h"

using namespace radixkv;
using radixkv::testing::iota_tokens;

namespace {

struct RuntimeFixture {
  explicit RuntimeFixture(uint32_t page_tokens, uint32_t capacity_pages = 64,
                          RuntimeConfig config = {})
      : pool(KvLayout{1, 1, 4, 2, page_tokens}, capacity_pages), runtime(pool, config) {}

  // Admits `prompt`, commits it whole and finishes: the prompt's full pages end up cached.
  AdmitResult serve(const std::vector<TokenId>& prompt, Namespace ns = 0) {
    const AdmitResult r = runtime.admit({7, ns, prompt});
    REQUIRE(r.ok());
    runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
    runtime.finish(r.seq);
    runtime.check_accounting();
    return r;
  }

  PagePool pool;
  PrefixCacheRuntime runtime;
};

}  // namespace

TEST_CASE("admit reuses the cached prefix, cut so that the last prompt token is computed") {
  for (uint32_t P : {1u, 4u, 16u}) {
    CAPTURE(P);
    RuntimeFixture f(P, 256);
    const auto prompt = iota_tokens(3 * P);  // exactly three pages
    const AdmitResult first = f.serve(prompt);
    CHECK(first.reused_tokens == 0);
    CHECK(first.block_table.size() == 3);
    CHECK(f.runtime.tree().cached_pages() == 3);

    // The same prompt again: fully cached, yet the last page is recomputed.
    AdmitResult again = f.runtime.admit({8, 0, prompt});
    REQUIRE(again.ok());
    CHECK(again.reused_tokens == 2 * P);
    CHECK(again.position_offset == again.reused_tokens);
    CHECK(f.runtime.view(again.seq).computed_tokens == 2 * P);
    f.runtime.abort(again.seq);

    // One token longer: all three pages are reused and only the new token is computed.
    auto longer = prompt;
    longer.push_back(-5);
    again = f.runtime.admit({9, 0, longer});
    REQUIRE(again.ok());
    CHECK(again.reused_tokens == 3 * P);
    CHECK(again.block_table.size() == 4);
    // Shared pages are the tree's own.
    for (uint32_t i = 0; i < 3; ++i) CHECK(f.runtime.tree().indexes_page(again.block_table[i]));
    CHECK_FALSE(f.runtime.tree().indexes_page(again.block_table[3]));
    f.runtime.abort(again.seq);

    // A one-token prompt reuses nothing; another namespace shares nothing.
    again = f.runtime.admit({10, 0, std::vector<TokenId>{0}});
    CHECK(again.reused_tokens == 0);
    f.runtime.abort(again.seq);
    again = f.runtime.admit({11, 5, longer});
    CHECK(again.reused_tokens == 0);
    f.runtime.abort(again.seq);

    const RuntimeStats& s = f.runtime.stats();
    CHECK(s.admits == 5);
    CHECK(s.reused_tokens == 5 * P);
    CHECK(s.prefill_tokens == s.prompt_tokens - s.reused_tokens);
    CHECK(f.runtime.check_accounting() == 0);
  }
}

TEST_CASE("chunked commits insert full pages, switch to canonical pages, release duplicates") {
  const uint32_t P = 4;
  RuntimeFixture f(P);
  const auto prompt = iota_tokens(3 * P + 2);
  const AdmitResult a = f.runtime.admit({1, 0, prompt});
  const AdmitResult b = f.runtime.admit({2, 0, prompt});
  REQUIRE((a.ok() && b.ok()));
  const std::vector<PageId> b_own(b.block_table.begin(), b.block_table.end());

  // A partial page commits nothing; a page and a half commits one page.
  CHECK(f.runtime.commit(a.seq, 3).new_pages == 0);
  CHECK(f.runtime.commit(a.seq, P + 2).new_pages == 1);
  CHECK(f.runtime.view(a.seq).committed_pages == 1);
  f.runtime.check_accounting();

  // b computed the same first two pages on its own: the first is a duplicate of a's.
  const CommitResult rb = f.runtime.commit(b.seq, 2 * P);
  CHECK(rb.duplicate_pages == 1);
  CHECK(rb.new_pages == 1);
  const SequenceView vb = f.runtime.view(b.seq);
  CHECK(vb.block_table[0] == f.runtime.view(a.seq).block_table[0]);
  CHECK(vb.block_table[1] == b_own[1]);
  CHECK(f.pool.refcount(b_own[0]) == 0);  // the duplicate went back to the pool
  CHECK(f.runtime.stats().duplicate_pages == 1);
  f.runtime.check_accounting();

  // Committed pages are locked: eviction cannot take them while the sequences live.
  CHECK(f.runtime.evict(100) == 0);
  f.runtime.finish(a.seq);
  f.runtime.finish(b.seq);
  CHECK(f.runtime.check_accounting() == 0);
  // a's second page is in the tree only if a committed it: a had committed one page, and finish
  // inserted only computed full pages (a computed P + 2 tokens), so the tree holds b's two pages.
  CHECK(f.runtime.tree().cached_pages() == 2);
  CHECK(f.runtime.evict(100) == 2);
}

TEST_CASE("decode appends tokens, takes a page when the last is full, caches only computed KV") {
  const uint32_t P = 4;
  RuntimeFixture f(P);
  const auto prompt = iota_tokens(P);  // one full page: the first decode token needs a new one
  const AdmitResult a = f.runtime.admit({1, 0, prompt});
  REQUIRE(a.ok());
  f.runtime.commit(a.seq, P);
  for (uint32_t i = 0; i < P + 1; ++i) {
    const ExtendResult e = f.runtime.append_token(a.seq, 100 + static_cast<TokenId>(i));
    REQUIRE(e.ok());
    CHECK(e.new_page == (i % P == 0));
    // Each token gets its KV before the next is sampled, except the last one appended.
    if (i < P) f.runtime.mark_computed(a.seq, P + i + 1);
    f.runtime.check_accounting();
  }
  const SequenceView v = f.runtime.view(a.seq);
  CHECK(v.tokens.size() == 2 * P + 1);
  CHECK(v.block_table.size() == 3);
  CHECK(v.computed_tokens == 2 * P);
  CHECK(f.runtime.stats().decode_tokens == P + 1);

  std::vector<TokenId> all(v.tokens.begin(), v.tokens.end());
  f.runtime.finish(a.seq);
  CHECK(f.runtime.check_accounting() == 0);
  // Two full computed pages are cached; the last token (no KV) is not.
  CHECK(f.runtime.tree().peek(0, all) == 2 * P);
  CHECK(f.runtime.tree().cached_pages() == 2);
}

TEST_CASE("abort keeps what was committed and drops the rest") {
  const uint32_t P = 2;
  RuntimeFixture f(P);
  const auto prompt = iota_tokens(4 * P);
  const AdmitResult a = f.runtime.admit({1, 0, prompt});
  f.runtime.commit(a.seq, P);
  f.runtime.mark_computed(a.seq, 3 * P);
  f.runtime.abort(a.seq);
  CHECK(f.runtime.check_accounting() == 0);
  CHECK(f.runtime.tree().cached_pages() == 1);
  CHECK(f.runtime.stats().aborts == 1);
  CHECK(f.pool.free_pages() == f.pool.capacity_pages() - 1);
}

TEST_CASE("finish and abort enforce the budget on pages a commit could not evict while pinned") {
  // P = 4, pages of 64 bytes, a budget of 8 pages with watermarks 1.0 / 0.5: high 8, low 4.
  // A sequence commits 12 pages: above high, but all pinned by it, so nothing can go. When it
  // finishes (nothing new to insert) or aborts, they are unpinned and the cache drops to low.
  const uint32_t P = 4;
  for (bool finish : {true, false}) {
    CAPTURE(finish);
    RuntimeFixture f(P, 64, RuntimeConfig{8 * 64, 1.0, 0.5, "lru"});
    REQUIRE(f.runtime.budget().high_pages() == 8);
    const AdmitResult a = f.runtime.admit({1, 0, iota_tokens(12 * P)});
    REQUIRE(a.ok());
    f.runtime.commit(a.seq, 12 * P);
    CHECK(f.runtime.tree().cached_pages() == 12);
    if (finish) {
      CHECK(f.runtime.finish(a.seq).new_pages == 0);
    } else {
      f.runtime.abort(a.seq);
    }
    CHECK(f.runtime.tree().cached_pages() == f.runtime.budget().low_pages());
    CHECK(f.runtime.stats().evicted_pages == 12 - f.runtime.budget().low_pages());
    CHECK(f.runtime.check_accounting() == 0);
  }
}

TEST_CASE("memory pressure: a distinct no-space outcome with nothing leaked, then success") {
  const uint32_t P = 4;
  RuntimeFixture f(P, 8);
  const AdmitResult a = f.runtime.admit({1, 0, iota_tokens(5 * P)});
  REQUIRE(a.ok());
  f.runtime.commit(a.seq, 5 * P);  // cached, but locked by a

  const uint32_t free_before = f.pool.free_pages();
  const AdmitResult b = f.runtime.admit({2, 0, iota_tokens(4 * P, 1000)});
  CHECK(b.status == RuntimeStatus::kNoSpace);
  CHECK(b.short_pages == 1);
  CHECK(f.pool.free_pages() == free_before);
  CHECK(f.runtime.live_sequences() == 1);
  CHECK(f.runtime.stats().admit_no_space == 1);
  f.runtime.check_accounting();

  // Prefix reuse shrinks the need: a's five pages are shared, three more fit.
  const AdmitResult c = f.runtime.admit({3, 0, iota_tokens(8 * P)});
  REQUIRE(c.ok());
  CHECK(c.reused_tokens == 5 * P);
  CHECK(f.pool.free_pages() == 0);
  // Decode with the pool full and nothing evictable: refused, sequence unchanged.
  f.runtime.mark_computed(c.seq, 8 * P);
  const ExtendResult e = f.runtime.append_token(c.seq, 1);
  CHECK(e.status == RuntimeStatus::kNoSpace);
  CHECK(f.runtime.view(c.seq).tokens.size() == 8 * P);
  CHECK(f.runtime.stats().extend_no_space == 1);
  f.runtime.check_accounting();

  // A request larger than the whole pool can never fit: a different outcome.
  const AdmitResult huge = f.runtime.admit({4, 0, iota_tokens(9 * P, 5000)});
  CHECK(huge.status == RuntimeStatus::kTooLarge);

  // The scheduler preempts c; b now fits by evicting cached pages that no one pins.
  f.runtime.abort(c.seq);
  f.runtime.finish(a.seq);
  const AdmitResult retry = f.runtime.admit({2, 0, iota_tokens(4 * P, 1000)});
  REQUIRE(retry.ok());
  CHECK(retry.evicted_pages > 0);
  f.runtime.abort(retry.seq);
  CHECK(f.runtime.check_accounting() == 0);
}

TEST_CASE("a handle is dead after finish or abort: clear errors, nothing changes") {
  RuntimeFixture f(4);
  const AdmitResult a = f.runtime.admit({42, 0, iota_tokens(9)});
  f.runtime.finish(a.seq);
  CHECK_FALSE(f.runtime.is_live(a.seq));
  CHECK(f.runtime.state(a.seq) == SeqState::kFinished);
  CHECK_THROWS_WITH_AS(f.runtime.finish(a.seq),
                       doctest::Contains("request 42) is already finished"), std::logic_error);
  CHECK_THROWS_AS(f.runtime.abort(a.seq), std::logic_error);
  CHECK_THROWS_AS(f.runtime.append_token(a.seq, 1), std::logic_error);
  CHECK_THROWS_AS(f.runtime.commit(a.seq, 4), std::logic_error);
  CHECK_THROWS_AS(f.runtime.view(a.seq), std::logic_error);

  const AdmitResult b = f.runtime.admit({43, 0, iota_tokens(9)});
  f.runtime.abort(b.seq);
  CHECK_THROWS_WITH_AS(f.runtime.abort(b.seq), doctest::Contains("is already aborted"),
                       std::logic_error);

  // The slot is reused by a later request: the old handle cannot reach it.
  const AdmitResult c = f.runtime.admit({44, 0, iota_tokens(9)});
  CHECK(c.seq.slot == b.seq.slot);
  CHECK_THROWS_WITH_AS(f.runtime.finish(b.seq), doctest::Contains("serves another request"),
                       std::logic_error);
  CHECK(f.runtime.is_live(c.seq));
  CHECK_THROWS_WITH_AS(f.runtime.finish(SeqHandle{}), doctest::Contains("never admitted"),
                       std::logic_error);
  CHECK_THROWS_AS(f.runtime.finish(SeqHandle{99, 1}), std::logic_error);
  f.runtime.check_accounting();
  f.runtime.finish(c.seq);
  CHECK(f.runtime.check_accounting() == 0);
}

TEST_CASE("bad arguments are refused before anything changes") {
  RuntimeFixture f(4);
  CHECK_THROWS_WITH_AS(f.runtime.admit({1, 0, {}}), doctest::Contains("empty prompt"),
                       std::invalid_argument);
  const auto prompt = iota_tokens(6);
  CHECK_THROWS_WITH_AS(f.runtime.admit({2, 0, prompt, 101}), doctest::Contains("priority 101"),
                       std::invalid_argument);
  CHECK(f.runtime.live_sequences() == 0);
  CHECK(f.runtime.stats().admits == 0);

  const AdmitResult a = f.runtime.admit({3, 0, prompt});
  f.runtime.commit(a.seq, 5);
  CHECK_THROWS_WITH_AS(f.runtime.commit(a.seq, 7), doctest::Contains("6 tokens in all"),
                       std::invalid_argument);
  CHECK_THROWS_AS(f.runtime.commit(a.seq, 4), std::invalid_argument);  // backwards
  CHECK_THROWS_AS(f.runtime.mark_computed(a.seq, 7), std::invalid_argument);
  CHECK(f.runtime.view(a.seq).computed_tokens == 5);
  f.runtime.check_accounting();

  PagePool other(KvLayout{1, 1, 4, 2, 4}, 64);  // f.pool serves f.runtime: one runtime per pool
  CHECK_THROWS_AS(PrefixCacheRuntime(other, RuntimeConfig{0, 0.5, 0.9, "lru"}),
                  std::invalid_argument);
  CHECK_THROWS_AS(PrefixCacheRuntime(other, RuntimeConfig{0, 0.95, 0.85, "nope"}),
                  std::invalid_argument);
  f.runtime.abort(a.seq);
}

TEST_CASE("priorities and the caller's clock reach the eviction policy") {
  for (double later : {1.0, 100.0}) {
    CAPTURE(later);
    const uint32_t P = 2;
    RuntimeFixture f(P, 64, RuntimeConfig{0, 1.0, 1.0, "priority:retention=10"});
    const auto high = iota_tokens(2 * P, 0), low = iota_tokens(2 * P, 100);
    for (const auto& [prompt, priority] : {std::pair{high, 90}, std::pair{low, 35}}) {
      const AdmitResult r = f.runtime.admit({1, 0, prompt, priority});
      f.runtime.commit(r.seq, 2 * P);
      f.runtime.finish(r.seq);
    }
    // A request at `later` caches a page: by 100 s the priority 90 has expired (retention 10 s)
    // and the older entry goes first; at 1 s it still protects its pages.
    f.runtime.set_now(later);
    const AdmitResult r = f.runtime.admit({3, 0, iota_tokens(P + 1, 500)});
    f.runtime.commit(r.seq, P);
    f.runtime.abort(r.seq);
    CHECK(f.runtime.evict(2) == 2);
    CHECK((f.runtime.tree().peek(0, high) == 0) == (later > 10));
    CHECK((f.runtime.tree().peek(0, low) == 0) == (later < 10));
    f.runtime.check_accounting();
  }
}

TEST_CASE("random admit, decode, commit, finish and abort keep the page accounting exact") {
  for (uint32_t P : {1u, 4u, 16u}) {
    CAPTURE(P);
    std::mt19937_64 rng(P);
    RuntimeFixture f(P, 48 / P + 24, RuntimeConfig{0, 0.8, 0.5, "lru"});
    std::vector<SeqHandle> live;
    std::vector<std::vector<TokenId>> prefixes = {iota_tokens(40), iota_tokens(40, 500)};
    uint64_t no_space = 0;
    for (int op = 0; op < 3000; ++op) {
      const uint64_t pick = rng() % 10;
      if (pick < 3 || live.empty()) {
        auto prompt = prefixes[rng() % 2];
        prompt.resize(1 + rng() % prompt.size());
        for (uint64_t extra = rng() % 12; extra > 0; --extra) prompt.push_back(rng() % 50);
        const AdmitResult r = f.runtime.admit({static_cast<uint64_t>(op), rng() % 2, prompt});
        if (r.ok()) {
          CHECK(r.reused_tokens < prompt.size());
          live.push_back(r.seq);
        } else {
          CHECK(r.status == RuntimeStatus::kNoSpace);
          ++no_space;
        }
      } else {
        const size_t i = rng() % live.size();
        const SequenceView v = f.runtime.view(live[i]);
        const auto n = static_cast<uint32_t>(v.tokens.size());
        if (pick < 6) {
          if (!f.runtime.append_token(live[i], rng() % 50).ok()) ++no_space;
        } else if (pick < 8) {
          const uint32_t to =
              v.computed_tokens + static_cast<uint32_t>(rng() % (n - v.computed_tokens + 1));
          if (rng() % 2) {
            f.runtime.commit(live[i], to);
          } else {
            f.runtime.mark_computed(live[i], to);
          }
        } else {
          if (pick == 8) {
            f.runtime.finish(live[i]);
          } else {
            f.runtime.abort(live[i]);
          }
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
      f.runtime.check_accounting();
      CHECK(f.runtime.live_sequences() == live.size());
    }
    CHECK(no_space > 0);  // the pool is small enough to refuse sometimes
    CHECK(f.runtime.stats().evicted_pages > 0);
    for (SeqHandle h : live) f.runtime.finish(h);
    CHECK(f.runtime.check_accounting() == 0);
  }
}
