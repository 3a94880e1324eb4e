// A pool, a runtime and a scheduler over them, with the checks every scheduler test wants: the
// page accounting after every step, the tokens of every finished sequence against its expected
// prompt + answer, and the order of first tokens, finishes and preemptions.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "sim/scheduler.h"

namespace radixkv::testing {

// n tokens counting up from `first`.
inline std::vector<TokenId> run_of(std::size_t n, TokenId first) {
  std::vector<TokenId> tokens(n);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

inline std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A request whose answer is `answer_tokens` tokens no prompt contains (derived from the id).
inline SchedRequest make_request(uint64_t id, std::vector<TokenId> prompt, uint32_t answer_tokens,
                                 int32_t priority = kDefaultPriority, Namespace ns = 0) {
  SchedRequest r;
  r.id = id;
  r.name_space = ns;
  r.priority = priority;
  r.prompt = std::move(prompt);
  r.answer = run_of(answer_tokens, static_cast<TokenId>(1'000'000'000 + id * 10'000));
  return r;
}

struct SchedulerFixture {
  SchedulerFixture(uint32_t page_tokens, uint32_t capacity_pages, const SchedulerConfig& config,
                   const RuntimeConfig& runtime_config = {})
      : pool(KvLayout{1, 1, 4, 2, page_tokens}, capacity_pages),
        runtime(pool, runtime_config),
        scheduler(runtime, config) {
    scheduler.set_finish_hook([this](const SchedRequest& r, const SequenceView& view) {
      // A sequence holds its prompt and every answer token but the last (never fed back).
      std::vector<TokenId> expected = r.prompt;
      if (!r.answer.empty()) expected.insert(expected.end(), r.answer.begin(), r.answer.end() - 1);
      const bool same = std::vector<TokenId>(view.tokens.begin(), view.tokens.end()) == expected;
      if (!same) wrong_tokens.push_back(r.id);
    });
  }

  void submit(SchedRequest request) { REQUIRE(scheduler.submit(std::move(request))); }

  // Steps until idle (at most max_steps), checking the accounting every `check_every` steps.
  void run(uint64_t max_steps = 1'000'000, uint64_t check_every = 1) {
    for (uint64_t i = 0; !scheduler.idle(); ++i) {
      REQUIRE(i < max_steps);
      const StepReport& report = scheduler.step();
      first_tokens.insert(first_tokens.end(), report.first_token.begin(), report.first_token.end());
      finished.insert(finished.end(), report.finished.begin(), report.finished.end());
      preempted.insert(preempted.end(), report.preempted.begin(), report.preempted.end());
      // A sequence that decoded in this step is still running or has just finished; one
      // preempted in the decode loop computed nothing and must not be counted (or priced).
      CHECK(report.decode_tokens <= report.running + report.finished.size());
      if (i % check_every == 0) runtime.check_accounting();
    }
  }

  // Once idle: no sequence is live and every page is either free or cached.
  void check_no_leak() const {
    CHECK(runtime.live_sequences() == 0);
    CHECK(runtime.check_accounting() == 0);
    CHECK(pool.free_pages() + runtime.tree().cached_pages() == pool.capacity_pages());
    CHECK(runtime.tree().protected_pages() == 0);
    CHECK(wrong_tokens.empty());
  }

  PagePool pool;
  PrefixCacheRuntime runtime;
  Scheduler scheduler;
  std::vector<uint64_t> first_tokens, finished, preempted, wrong_tokens;
};

}  // namespace radixkv::testing
