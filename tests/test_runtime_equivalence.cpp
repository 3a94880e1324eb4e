// End to end: the logits of every prefill and decode step of random multi-turn conversations run
// through PrefixCacheRuntime (K/V in pool pages, prefixes reused) equal, bitwise, the logits of the
// same turns computed from scratch with no cache. The summation order of the model does not depend
// on chunking or on where K/V live, so the tolerance is exact equality; the largest relative error
// is reported too. A control run with the mistral.rs offset bug (rotary positions of new tokens
// restart at 0) must fail the same comparison.
//
// The same scenarios run with a host tier under each write policy (host backends on both tiers,
// real bytes, copies through the runtime's memcpy copier, or deferred until waited for): pages
// evicted between turns go to the host and are loaded back by later turns. Logits must stay
// bitwise equal, the offset-bug control must still fail, and a second control that computes
// before its load is done must fail, first on a turn that had a load to wait for.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "tests/runtime_conversation.h"
#include "tests/test_copier.h"

using namespace radixkv;
using namespace radixkv::testing;

namespace {

constexpr uint32_t kMaxPromptTokens = 200;

struct ScenarioTotals {
  uint64_t turns = 0, reused_turns = 0;
  uint64_t prompt_tokens = 0, reused_tokens = 0, prefill_computed = 0, decode_computed = 0;
  uint64_t rows = 0, equal_rows = 0;
  uint64_t turns_with_mismatch = 0, fresh_turns_with_mismatch = 0;
  double max_relative_error = 0.0;
  uint64_t evicted_pages = 0, duplicate_pages = 0;
  uint64_t partial_hit_turns = 0, partial_hit_tokens = 0;  // partial-page reuse runs
  // Host tier runs.
  uint64_t host_hit_turns = 0, host_hit_tokens = 0, loaded_pages = 0, written_pages = 0;
  uint64_t host_evicted_pages = 0;
  bool first_mismatch_waited_for_load = false;
  // Turns whose reuse was checked to equal the oracle's exactly (nothing evicted yet), by kind.
  uint64_t exact_turns = 0, exact_branches = 0, exact_repeats = 0, exact_pairs = 0;
};

enum class TurnKind { kTurn, kBranch, kRepeat, kPair };

struct Conversation {
  Namespace ns = 0;
  std::vector<TokenId> history;
  bool new_branch = false;  // its next turn is the first after diverging from another
};

// Longest page-aligned common prefix of `prompt` (cut to the admit limit) with anything whose
// pages were cached in namespace `ns`: what admit must reuse when nothing was evicted. With
// partial-page reuse, plus the most leading tokens of the next page that a cached page holds
// (fewer than a page, never the last prompt token).
uint32_t oracle_reuse(const std::vector<TurnLog>& history, Namespace ns,
                      const std::vector<TokenId>& prompt, uint32_t page_tokens,
                      bool partial_reuse = false) {
  const size_t last = prompt.size() - 1;  // tokens that may be reused
  const size_t cut = last / page_tokens * page_tokens;
  struct Cached {
    size_t same, pages_end;
  };
  std::vector<Cached> cached;
  size_t best = 0;
  for (const TurnLog& log : history) {
    if (log.ns != ns) continue;
    const size_t end = (log.reused_tokens + log.computed_tokens) / page_tokens * page_tokens;
    const size_t n = std::min(last, end);
    const size_t same =
        std::mismatch(prompt.begin(), prompt.begin() + n, log.tokens.begin()).first -
        prompt.begin();
    cached.push_back({same, end});
    best = std::max(best, std::min(cut, same / page_tokens * page_tokens));
  }
  size_t partial = 0;
  for (const auto& [same, end] : cached) {
    if (!partial_reuse || same <= best || end < best + page_tokens) continue;
    partial = std::max(partial, std::min({same - best, size_t{page_tokens} - 1, last - best}));
  }
  return static_cast<uint32_t>(best + partial);
}

// A host tier under the device pool, or none (write == nullptr).
struct HostTierRun {
  const char* write = nullptr;  // a write policy spec
  bool deferred = false;        // copies run only when waited for
  bool skip_load_wait = false;  // the control: compute before the load is done
};

uint32_t device_pages_for(uint32_t page_tokens) {
  return 3 * ((kMaxPromptTokens + 2 * page_tokens + 40) / page_tokens) + 4;
}

class Scenario {
 public:
  Scenario(uint32_t page_tokens, uint64_t seed, bool offset_bug, HostTierRun host = {},
           bool partial_reuse = false)
      : P_(page_tokens),
        model_(TinyConfig{}, 1234),
        pool_(model_.kv_layout(page_tokens), device_pages_for(page_tokens), make_host_backend()),
        // A quarter of the device's pages: the host fills up and evicts too.
        host_pool_(model_.kv_layout(page_tokens), device_pages_for(page_tokens) / 4,
                   make_host_backend()),
        copier_(host.deferred),
        runtime_(pool_, RuntimeConfig{.partial_reuse = partial_reuse}, tier_config(host)),
        rng_(seed),
        offset_bug_(offset_bug),
        partial_reuse_(partial_reuse),
        host_(host) {}

  ScenarioTotals run() {
    std::vector<std::vector<TokenId>> systems;
    for (int i = 0; i < 3; ++i) systems.push_back(random_tokens(3, 40));
    // Conversations 0 and 3 share a system prompt but not a namespace: no sharing between them.
    std::vector<Conversation> conversations;
    for (int i = 0; i < 4; ++i) conversations.push_back({i == 3 ? 1u : 0u, systems[i % 3]});

    // Rounds 0-2 evict only when the budget or an allocation needs it (usually never), so reuse is
    // checked exactly against the oracle there; from round 3 on, evictions between turns.
    for (int round = 0; round < 6; ++round) {
      for (Conversation& c : conversations) {
        if (c.history.size() + 12 > kMaxPromptTokens) continue;
        std::vector<TokenId> prompt = c.history;
        const auto message = random_tokens(1, 12);
        prompt.insert(prompt.end(), message.begin(), message.end());
        const TurnKind kind = c.new_branch ? TurnKind::kBranch : TurnKind::kTurn;
        c.new_branch = false;
        c.history = run_turns(c.ns, prompt, 1, kind).tokens;  // next: prompt + answer + message
      }
      if (round == 0 || round == 1 || round == 3) branch(conversations);
      if (round == 1 || round == 4) repeat_earlier_prompt();
      if (round == 0 || round == 3) {
        run_turns(0, random_tokens(2 * P_ + 1, 4 * P_ + 3), 2, TurnKind::kPair);
      }
      if (round >= 3 && runtime_.tree().cached_pages() > 1) {
        // Evictions between turns, on top of those the budget and allocations make: with a host
        // tier up to all of the device's pages, for the next turns to load back.
        const uint64_t cached = runtime_.tree().cached_pages();
        std::uniform_int_distribution<uint64_t> pages(1, host_.write ? cached : cached / 2);
        runtime_.evict(pages(rng_));
        runtime_.check_accounting();
      }
    }
    totals_.evicted_pages = runtime_.stats().evicted_pages;
    totals_.duplicate_pages = runtime_.stats().duplicate_pages;
    const TreeStats& tree = runtime_.tree().stats();
    totals_.loaded_pages = tree.loaded_pages;
    totals_.written_pages = tree.written_pages;
    totals_.host_evicted_pages = tree.host_evicted_pages;
    CHECK(runtime_.live_sequences() == 0);
    CHECK(runtime_.check_accounting() == 0);
    return totals_;
  }

 private:
  std::vector<TokenId> random_tokens(uint32_t min_len, uint32_t max_len) {
    std::uniform_int_distribution<uint32_t> len(min_len, max_len);
    std::uniform_int_distribution<TokenId> token(0,
                                                 static_cast<TokenId>(model_.config().vocab - 1));
    std::vector<TokenId> tokens(len(rng_));
    for (TokenId& t : tokens) t = token(rng_);
    return tokens;
  }

  TierConfig tier_config(const HostTierRun& host) {
    TierConfig c;
    if (host.write != nullptr) {
      c.host.pool = &host_pool_;
      // Deferred copies need the test's copier; otherwise the runtime's own (a memcpy copier).
      c.host.copier = host.deferred ? &copier_ : nullptr;
      c.host.write_policy = host.write;
    }
    return c;
  }

  // Reuse must equal the oracle's while every page ever cached is still in the trie on some tier.
  bool nothing_left_the_trie() const {
    const TreeStats& tree = runtime_.tree().stats();
    return host_.write == nullptr ? runtime_.stats().evicted_pages == 0
                                  : tree.host_evicted_pages == 0 && tree.dropped_pages == 0;
  }

  DriveOptions options() {
    const uint32_t chunks[] = {0, 1, 3, P_, 2 * P_ + 1};
    DriveOptions o;
    o.chunk = chunks[rng_() % 5];
    o.decode_steps = 1 + static_cast<uint32_t>(rng_() % (P_ + 4));
    o.commit_decode = rng_() % 2 == 0;
    o.rope_restarts_at_zero = offset_bug_;
    o.skip_load_wait = host_.skip_load_wait;
    return o;
  }

  // Runs `copies` sequences of the same prompt side by side, one step each in turn (the copies
  // compute the same pages; whichever commits second gets them switched to the first's), checks
  // each against the no-cache reference, and returns the first's log.
  TurnLog run_turns(Namespace ns, const std::vector<TokenId>& prompt, int copies, TurnKind kind) {
    const uint32_t expected = oracle_reuse(history_, ns, prompt, P_, partial_reuse_);
    const bool exact = nothing_left_the_trie();
    std::vector<ActiveTurn> turns;
    for (int i = 0; i < copies; ++i) {
      turns.emplace_back(runtime_, pool_, model_, ns, prompt, options());
    }
    for (bool busy = true; busy;) {
      busy = false;
      for (ActiveTurn& turn : turns) busy = turn.step() || busy;
      runtime_.check_accounting();
    }
    for (const ActiveTurn& turn : turns) record(turn.log(), expected, exact);
    if (exact) {
      uint64_t* counters[] = {&totals_.exact_turns, &totals_.exact_branches, &totals_.exact_repeats,
                              &totals_.exact_pairs};
      ++*counters[static_cast<int>(kind)];
    }
    return turns.front().log();
  }

  void record(const TurnLog& log, uint32_t expected_reuse, bool exact) {
    CAPTURE(totals_.turns);
    // Reuse is what was cached: exactly the oracle's while nothing was evicted, never more.
    if (exact) {
      CHECK(log.reused_tokens == expected_reuse);
    } else {
      CHECK(log.reused_tokens <= expected_reuse);
    }
    // The model computed exactly the prompt tokens that were not reused.
    CHECK(log.prefill_computed == log.prompt_tokens - log.reused_tokens);
    const Comparison c = compare_with_reference(model_, log);
    ++totals_.turns;
    totals_.reused_turns += log.reused_tokens > 0 ? 1 : 0;
    totals_.prompt_tokens += log.prompt_tokens;
    totals_.reused_tokens += log.reused_tokens;
    totals_.prefill_computed += log.prefill_computed;
    totals_.decode_computed += log.computed_tokens - log.prefill_computed;
    totals_.rows += c.rows;
    totals_.equal_rows += c.bitwise_equal_rows;
    totals_.max_relative_error = std::max(totals_.max_relative_error, c.max_relative_error);
    if (c.bitwise_equal_rows != c.rows) {
      ++totals_.turns_with_mismatch;
      if (log.reused_tokens == 0) ++totals_.fresh_turns_with_mismatch;
      if (totals_.turns_with_mismatch == 1) {
        totals_.first_mismatch_waited_for_load = log.waited_for_load;
      }
    }
    totals_.partial_hit_turns += log.partial_hit_tokens > 0 ? 1 : 0;
    totals_.partial_hit_tokens += log.partial_hit_tokens;
    totals_.host_hit_turns += log.host_hit_tokens > 0 ? 1 : 0;
    totals_.host_hit_tokens += log.host_hit_tokens;
    history_.push_back(log);
  }

  // A new conversation that follows an existing one and diverges in the middle of a page.
  void branch(std::vector<Conversation>& conversations) {
    const auto [ns, history, new_branch] = conversations[rng_() % conversations.size()];
    if (history.size() < P_ + 2) return;
    const uint32_t pages = static_cast<uint32_t>((history.size() - 1) / P_);
    uint32_t cut = static_cast<uint32_t>(rng_() % pages) * P_ + P_ / 2;
    cut = std::max<uint32_t>(cut, 1);
    std::vector<TokenId> fork(history.begin(), history.begin() + cut);
    fork.push_back((history[cut] + 1) % static_cast<TokenId>(model_.config().vocab));
    const auto rest = random_tokens(0, 6);
    fork.insert(fork.end(), rest.begin(), rest.end());
    conversations.push_back({ns, std::move(fork), true});
  }

  // A turn whose prompt is exactly an earlier one: at most the last page is recomputed.
  void repeat_earlier_prompt() {
    const TurnLog& earlier = history_[rng_() % history_.size()];
    const std::vector<TokenId> prompt(earlier.tokens.begin(),
                                      earlier.tokens.begin() + earlier.prompt_tokens);
    run_turns(earlier.ns, prompt, 1, TurnKind::kRepeat);
  }

  uint32_t P_;
  TinyTransformer model_;
  PagePool pool_;
  PagePool host_pool_;
  TestCopier copier_;
  PrefixCacheRuntime runtime_;
  std::mt19937_64 rng_;
  bool offset_bug_;
  bool partial_reuse_;
  HostTierRun host_;
  std::vector<TurnLog> history_;
  ScenarioTotals totals_;
};

}  // namespace

TEST_CASE("cached logits equal from-scratch logits, bitwise, at page sizes 1, 4 and 16") {
  for (uint32_t P : {1u, 4u, 16u}) {
    for (uint64_t seed : {1u, 2u}) {
      CAPTURE(P);
      CAPTURE(seed);
      const ScenarioTotals t = Scenario(P, seed, false).run();
      CHECK(t.equal_rows == t.rows);
      CHECK(t.max_relative_error == 0.0);
      CHECK(t.turns_with_mismatch == 0);
      // The scenario exercised what it claims: reuse, evictions, duplicate pages switched.
      CHECK(t.reused_turns > t.turns / 2);
      CHECK(t.evicted_pages > 0);
      CHECK(t.duplicate_pages > 0);
      CHECK(t.exact_turns > 0);
      CHECK(t.exact_branches > 0);
      CHECK(t.exact_repeats > 0);
      CHECK(t.exact_pairs > 0);
      CHECK(t.prefill_computed == t.prompt_tokens - t.reused_tokens);
      MESSAGE("P=", P, " seed=", seed, ": ", t.turns, " turns (", t.reused_turns,
              " reusing), prompt tokens ", t.prompt_tokens, ", reused ", t.reused_tokens,
              ", prefill computed ", t.prefill_computed, ", decode computed ", t.decode_computed,
              ", rows compared ", t.rows, " (all bitwise equal), evicted pages ", t.evicted_pages,
              ", duplicate pages switched ", t.duplicate_pages, "; reuse checked exactly on ",
              t.exact_turns, " turns, ", t.exact_branches, " branches, ", t.exact_repeats,
              " repeats, ", t.exact_pairs, " side-by-side pairs");
    }
  }
}

TEST_CASE("control: rotary positions restarting at 0 after a reused prefix fail the comparison") {
  for (uint32_t P : {1u, 4u, 16u}) {
    CAPTURE(P);
    const ScenarioTotals t = Scenario(P, 1, true).run();
    // Turns that reused nothing are unaffected by the bug; every turn that reused is caught.
    CHECK(t.fresh_turns_with_mismatch == 0);
    CHECK(t.turns_with_mismatch == t.reused_turns);
    CHECK(t.reused_turns > 0);
    CHECK(t.equal_rows < t.rows);
    CHECK(t.max_relative_error > 1e-6);
  }
}

TEST_CASE("partial-page reuse: logits stay bitwise equal, reuse equals the oracle's exactly") {
  // Branches diverge in the middle of a page and repeated prompts end inside one: the copied
  // leading tokens of those pages are reused too. (P = 1 has no partial page.)
  for (uint32_t P : {4u, 16u}) {
    for (uint64_t seed : {1u, 2u}) {
      CAPTURE(P);
      CAPTURE(seed);
      const ScenarioTotals t = Scenario(P, seed, false, {}, true).run();
      CHECK(t.equal_rows == t.rows);
      CHECK(t.max_relative_error == 0.0);
      CHECK(t.turns_with_mismatch == 0);
      CHECK(t.partial_hit_turns > 0);
      CHECK(t.exact_branches > 0);
      CHECK(t.prefill_computed == t.prompt_tokens - t.reused_tokens);
      MESSAGE("P=", P, " seed=", seed, ": ", t.turns, " turns, ", t.partial_hit_turns,
              " with a partial hit (", t.partial_hit_tokens, " tokens of ", t.reused_tokens,
              " reused)");
    }
  }
}

TEST_CASE("control: with partial-page reuse, rotary positions restarting at 0 fail") {
  for (uint32_t P : {4u, 16u}) {
    CAPTURE(P);
    const ScenarioTotals t = Scenario(P, 1, true, {}, true).run();
    CHECK(t.partial_hit_turns > 0);
    CHECK(t.fresh_turns_with_mismatch == 0);
    CHECK(t.turns_with_mismatch == t.reused_turns);
    CHECK(t.max_relative_error > 1e-6);
  }
}

TEST_CASE("through a host tier, logits stay bitwise equal as pages go to the host and come back") {
  for (const std::string write : {"write_back", "write_through", "write_through_selective"}) {
    uint64_t host_evicted = 0;
    for (uint32_t P : {1u, 4u, 16u}) {
      for (uint64_t seed : {1u, 2u}) {
        CAPTURE(write);
        CAPTURE(P);
        CAPTURE(seed);
        const ScenarioTotals t = Scenario(P, seed, false, {write.c_str(), seed == 2}).run();
        CHECK(t.equal_rows == t.rows);
        CHECK(t.max_relative_error == 0.0);
        CHECK(t.turns_with_mismatch == 0);
        // The scenario went through the host: pages were written there and loaded back.
        CHECK(t.host_hit_turns > 0);
        CHECK(t.loaded_pages > 0);
        CHECK(t.written_pages > 0);
        CHECK(t.reused_turns > t.turns / 2);
        CHECK(t.exact_turns > 0);
        CHECK(t.prefill_computed == t.prompt_tokens - t.reused_tokens);
        host_evicted += t.host_evicted_pages;
        MESSAGE(write, " P=", P, " seed=", seed, ": ", t.turns, " turns, ", t.host_hit_turns,
                " loading from the host (", t.host_hit_tokens, " tokens, ", t.loaded_pages,
                " pages), ", t.written_pages, " pages written to the host, ", t.host_evicted_pages,
                " evicted from it; ", t.rows, " rows bitwise equal");
      }
    }
    CAPTURE(write);
    CHECK(host_evicted > 0);  // the host filled up and evicted, in some runs at least
  }
}

TEST_CASE("control: with a host tier, rotary positions restarting at 0 still fail") {
  for (uint32_t P : {1u, 4u, 16u}) {
    CAPTURE(P);
    const ScenarioTotals t = Scenario(P, 1, true, {"write_back"}).run();
    CHECK(t.fresh_turns_with_mismatch == 0);
    CHECK(t.turns_with_mismatch == t.reused_turns);
    CHECK(t.host_hit_turns > 0);
    CHECK(t.equal_rows < t.rows);
  }
}

TEST_CASE("control: computing before the host tier's load is done fails the comparison") {
  for (uint32_t P : {1u, 4u, 16u}) {
    CAPTURE(P);
    HostTierRun control{"write_back", /*deferred=*/true, /*skip_load_wait=*/true};
    const ScenarioTotals t = Scenario(P, 1, false, control).run();
    CHECK(t.host_hit_turns > 0);
    CHECK(t.turns_with_mismatch > 0);
    // The first wrong turn is one that had a load to wait for: it read pages whose bytes were not
    // there yet. (Later turns may be wrong without one: they reuse what it computed and cached.)
    CHECK(t.first_mismatch_waited_for_load);
    MESSAGE("P=", P, ": ", t.turns_with_mismatch, " turns wrong, ", t.host_hit_turns,
            " loading from the host");
  }
}
