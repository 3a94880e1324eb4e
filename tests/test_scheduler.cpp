// The reference scheduler: each ordering policy's cases worked out by hand, in-batch prefix
// sharing, preemption (victim rule, no leak, every requeued request completes with its tokens),
// the anti-starvation rule, caching off, bad input, and a random workload under a tight pool.
#include <doctest/doctest.h>

#include <random>
#include <stdexcept>

#include "tests/test_scheduler_fixture.h"

using namespace radixkv;
using namespace radixkv::testing;

namespace {

SchedulerConfig config_for(std::string_view schedule, uint32_t max_running = 1) {
  SchedulerConfig config = SchedulerConfig::from_schedule(schedule);
  config.max_running = max_running;
  return config;
}

// P = 4. The cache holds X (16 tokens, 4 pages) after this; the three requests then have, under
// admit's cut of floor((len-1)/4)*4: R1 no cached prefix, R2 8 tokens, R3 16 tokens.
void submit_lpm_case(SchedulerFixture& f) {
  const auto x = run_of(16, 0);
  f.submit(make_request(100, x, 1));
  f.run();
  REQUIRE(f.runtime.tree().cached_pages() == 4);
  f.first_tokens.clear();
  f.finished.clear();
  f.submit(make_request(1, run_of(12, 5000), 2));
  f.submit(make_request(2, concat(run_of(8, 0), run_of(8, 6000)), 2));
  f.submit(make_request(3, concat(x, run_of(4, 7000)), 2));
}

}  // namespace

TEST_CASE("fcfs admits in submission order") {
  SchedulerFixture f(4, 64, config_for("fcfs"));
  for (uint64_t id : {3u, 1u, 2u}) f.submit(make_request(id, run_of(10, id * 100), 5));
  f.run();
  CHECK(f.first_tokens == std::vector<uint64_t>{3, 1, 2});
  CHECK(f.finished == std::vector<uint64_t>{3, 1, 2});
  f.check_no_leak();
}

TEST_CASE("lpm admits the longest cached prefix first, fcfs ignores it") {
  SUBCASE("lpm") {
    SchedulerFixture f(4, 64, config_for("lpm"));
    submit_lpm_case(f);
    f.run();
    CHECK(f.first_tokens == std::vector<uint64_t>{3, 2, 1});
    CHECK(f.scheduler.stats().hit_tokens == 8 + 16);
    f.check_no_leak();
  }
  SUBCASE("fcfs") {
    SchedulerFixture f(4, 64, config_for("fcfs"));
    submit_lpm_case(f);
    f.run();
    CHECK(f.first_tokens == std::vector<uint64_t>{1, 2, 3});
    f.check_no_leak();
  }
  SUBCASE("lpm falls back to fcfs while the queue is longer than lpm_max_queue") {
    // Three wait at the first admission (fcfs: R1); two at the next (lpm: R3, then R2).
    SchedulerConfig config = config_for("lpm");
    config.lpm_max_queue = 2;
    SchedulerFixture f(4, 64, config);
    submit_lpm_case(f);
    f.run();
    CHECK(f.first_tokens == std::vector<uint64_t>{1, 3, 2});
    // Admission rounds ordered by lpm: X's (one waiting), then R3's and R2's; not R1's.
    CHECK(f.scheduler.stats().lpm_steps == 3);
    f.check_no_leak();
  }
}

TEST_CASE("an urgent request goes first under lpm, whatever its cached prefix") {
  // L runs 40 steps with max_running 1. U (nothing cached) is queued at L's first step, H (16
  // tokens cached) 35 steps later. When L finishes, lpm prefers H, unless U has waited more than
  // starve_steps (10: U has waited about 40 steps, H about 5, so only U is urgent).
  for (uint32_t starve_steps : {10u, 1000u}) {
    CAPTURE(starve_steps);
    SchedulerConfig config = config_for("lpm");
    config.starve_steps = starve_steps;
    SchedulerFixture f(4, 64, config);
    const auto x = run_of(16, 0);
    f.submit(make_request(100, x, 1));
    f.run();
    f.first_tokens.clear();
    f.submit(make_request(1, run_of(8, 9000), 40));  // L
    f.scheduler.step();
    f.submit(make_request(2, run_of(12, 5000), 2));  // U
    for (int i = 0; i < 35; ++i) f.scheduler.step();
    REQUIRE(f.scheduler.running() == 1);
    f.submit(make_request(3, concat(x, run_of(4, 7000)), 2));  // H
    f.run();
    const std::vector<uint64_t> expected =
        starve_steps == 10 ? std::vector<uint64_t>{2, 3} : std::vector<uint64_t>{3, 2};
    CHECK(f.first_tokens == expected);
    f.check_no_leak();
  }
}

TEST_CASE("in-batch prefix sharing holds a request behind the leader computing its prefix") {
  // P = 4, nothing cached. A and B share 12 tokens (3 pages) then differ; C shares nothing.
  // Step 1 admits A and C; with sharing, B's first uncached page equals A's, so B waits one step
  // and then reuses A's 3 committed pages. Without it B computes them again in the same batch.
  for (bool share : {true, false}) {
    CAPTURE(share);
    SchedulerFixture f(4, 64, config_for(share ? "share" : "fcfs", 8));
    const auto s = run_of(12, 0);
    f.submit(make_request(1, concat(s, run_of(4, 100)), 3));  // A
    f.submit(make_request(2, concat(s, run_of(4, 200)), 3));  // B
    f.submit(make_request(3, run_of(16, 300), 3));            // C
    const StepReport& first = f.scheduler.step();
    CHECK(first.admitted == (share ? std::vector<uint64_t>{1, 3} : std::vector<uint64_t>{1, 2, 3}));
    CHECK(first.held == (share ? std::vector<uint64_t>{2} : std::vector<uint64_t>{}));
    f.run();
    CHECK(f.scheduler.stats().hit_tokens == (share ? 12 : 0));
    CHECK(f.runtime.stats().duplicate_pages == (share ? 0 : 3));
    f.check_no_leak();
  }
}

TEST_CASE("decode out of pages preempts the lowest priority, then the newest") {
  // P = 4, 12 pages. Three requests of 8 prompt tokens (2 pages) and 20 answer tokens: after
  // prefill 6 pages are held; every 4 decode steps each needs one more, and the 13th page does
  // not exist. Then the rule picks the victim: the low-priority one, or among equals the newest.
  struct Case {
    std::vector<int32_t> priorities;
    uint64_t first_victim;
  };
  for (const Case& c : {Case{{50, 10, 50}, 2}, Case{{35, 35, 35}, 3}, Case{{5, 35, 35}, 1}}) {
    CAPTURE(c.first_victim);
    SchedulerFixture f(4, 12, config_for("fcfs", 3));
    for (uint64_t id = 1; id <= 3; ++id) {
      f.submit(
          make_request(id, run_of(8, static_cast<TokenId>(id * 100)), 20, c.priorities[id - 1]));
    }
    f.run();
    REQUIRE(!f.preempted.empty());
    CHECK(f.preempted.front() == c.first_victim);
    CHECK(f.finished.size() == 3);
    CHECK(f.scheduler.stats().finished == 3);
    f.check_no_leak();
  }
}

TEST_CASE("a preempted request keeps its computed pages cached and resumes where it was") {
  // The victim's 16 computed tokens (4 pages) are committed before it lets go; when readmitted
  // its prompt is its prompt + the answer tokens sampled so far, and what is still cached is hit.
  SchedulerFixture f(4, 12, config_for("fcfs", 3));
  for (uint64_t id = 1; id <= 3; ++id) {
    f.submit(make_request(id, run_of(8, static_cast<TokenId>(id * 100)), 20, id == 2 ? 10 : 50));
  }
  f.run();
  CHECK(f.preempted.front() == 2);
  CHECK(f.scheduler.stats().readmitted == f.scheduler.stats().preemptions);
  CHECK(f.runtime.stats().reused_tokens > 0);  // only the readmissions can hit
  // Admitted three times at first, then once per preemption.
  CHECK(f.runtime.stats().admits == 3 + f.scheduler.stats().preemptions);
  f.check_no_leak();
}

TEST_CASE("a request preempted max_preemptions times is protected from the next preemption") {
  // Same pressure as above, request 2 has the lowest priority; with max_preemptions = 1 it is
  // preempted once, then protected: it never appears twice among the victims.
  SchedulerConfig config = config_for("fcfs", 3);
  config.max_preemptions = 1;
  SchedulerFixture f(4, 12, config);
  for (uint64_t id = 1; id <= 3; ++id) {
    f.submit(make_request(id, run_of(8, static_cast<TokenId>(id * 100)), 40, id == 2 ? 10 : 50));
  }
  f.run();
  CHECK(std::count(f.preempted.begin(), f.preempted.end(), 2u) == 1);
  CHECK(f.preempted.size() >= 2);
  f.check_no_leak();
}

TEST_CASE("lpm reaches a higher hit rate than fcfs on alternating shared prefixes") {
  // Why it must: P = 4 and 12 pages. Requests alternate between two 32-token (8-page) system
  // prompts X and Y, each with a unique 4-token tail and a one-token answer, max_running = 1.
  // A request holds 9 pages, so while one runs at most 3 pages of the other prefix survive:
  // under fcfs every request finds the other prefix's request just before it, and hits at most
  // 3 pages (12 tokens). lpm, after X1 has cached X, admits X2..X5 (each hits all 32 cached
  // tokens: the cut of a 36-token prompt is 32), then Y1 (a miss) caches Y for Y2..Y5: 8 * 32.
  const auto x = run_of(32, 0), y = run_of(32, 1000);
  const auto run = [&](std::string_view schedule) {
    SchedulerFixture f(4, 12, config_for(schedule));
    for (uint64_t k = 0; k < 5; ++k) {
      f.submit(make_request(2 * k, concat(x, run_of(4, static_cast<TokenId>(5000 + 10 * k))), 1));
      f.submit(
          make_request(2 * k + 1, concat(y, run_of(4, static_cast<TokenId>(6000 + 10 * k))), 1));
    }
    f.run();
    f.check_no_leak();
    return f.scheduler.stats().hit_tokens;
  };
  const uint64_t lpm = run("lpm");
  const uint64_t fcfs = run("fcfs");
  CHECK(lpm == 8 * 32);
  CHECK(fcfs <= 9 * 12);
  CHECK(lpm > fcfs);
}

TEST_CASE("with caching off nothing is cached or reused, and everything still completes") {
  SchedulerConfig config = config_for("lpm", 4);
  config.use_cache = false;
  SchedulerFixture f(4, 40, config);
  const auto x = run_of(16, 0);
  for (uint64_t id = 0; id < 6; ++id) {
    f.submit(make_request(id, concat(x, run_of(4, static_cast<TokenId>(100 * id + 50))), 7));
  }
  f.run();
  CHECK(f.finished.size() == 6);
  CHECK(f.scheduler.stats().hit_tokens == 0);
  CHECK(f.runtime.tree().cached_pages() == 0);
  CHECK(f.scheduler.stats().prefill_tokens == 6 * 20);
  f.check_no_leak();
}

TEST_CASE("bad input is refused with a reason and changes nothing") {
  SchedulerFixture f(4, 8, config_for("fcfs"));
  // 8 pages hold 32 tokens; prompt 30 + answer 4 needs 33 tokens at most: 9 pages.
  CHECK_FALSE(f.scheduler.submit(make_request(1, run_of(30, 0), 4)));
  CHECK(f.scheduler.stats().rejected == 1);
  CHECK(f.scheduler.submit(make_request(2, run_of(30, 0), 3)));  // 32 tokens: fits exactly
  CHECK_THROWS_WITH_AS(f.scheduler.submit(make_request(3, {}, 3)),
                       doctest::Contains("request 3 has an empty prompt"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(f.scheduler.submit(make_request(4, run_of(3, 0), 3, 101)),
                       doctest::Contains("priority 101"), std::invalid_argument);
  f.run();
  CHECK(f.finished == std::vector<uint64_t>{2});
  f.check_no_leak();

  SchedulerConfig bad;
  bad.max_running = 0;
  CHECK_THROWS_WITH_AS(Scheduler(f.runtime, bad), doctest::Contains("max_running is 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(SchedulerConfig::from_schedule("lifo"),
                       doctest::Contains("unknown schedule 'lifo'"), std::invalid_argument);
}

TEST_CASE("random shared-prefix workloads under a tight pool: no leak, right tokens, all done") {
  for (std::string_view schedule : {"fcfs", "lpm", "share", "lpm-share"}) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      CAPTURE(schedule);
      CAPTURE(seed);
      std::mt19937 rng(seed);
      SchedulerConfig config = config_for(schedule, 6);
      config.chunk_tokens = 24;
      config.starve_steps = 50;
      SchedulerFixture f(4, 40, config, RuntimeConfig{0, 0.9, 0.6, "lru"});
      std::vector<std::vector<TokenId>> prefixes;
      for (int i = 0; i < 4; ++i) prefixes.push_back(run_of(4 + 8 * i, 100'000 * (i + 1)));
      uint64_t next_id = 0;
      for (int round = 0; round < 60; ++round) {
        for (int k = std::uniform_int_distribution<int>(0, 3)(rng); k > 0; --k) {
          auto prompt = prefixes[rng() % prefixes.size()];
          const auto tail =
              run_of(1 + rng() % 20, static_cast<TokenId>(10'000'000 + 100 * next_id));
          prompt.insert(prompt.end(), tail.begin(), tail.end());
          const int32_t priority = static_cast<int32_t>(rng() % 3) * 30;
          f.submit(make_request(next_id++, prompt, rng() % 40, priority, rng() % 2));
        }
        f.scheduler.step();
        f.runtime.check_accounting();
      }
      f.run();
      CHECK(f.scheduler.stats().finished == next_id);
      f.check_no_leak();
    }
  }
}

TEST_CASE("request priorities reach the eviction policy") {
  // P = 4, 12 pages. A (priority 90) then B (priority 10) each cache 16 tokens (4 pages) and
  // finish; C (24 tokens, 6 pages) finds 4 free pages and evicts 2. LRU takes them from the
  // older A; the priority policy from the low-priority B, though B was used last.
  for (const char* policy : {"lru", "priority"}) {
    CAPTURE(policy);
    SchedulerFixture f(4, 12, config_for("fcfs"), RuntimeConfig{0, 1.0, 1.0, policy});
    const auto a = run_of(16, 0), b = run_of(16, 1000);
    f.submit(make_request(1, a, 1, 90));
    f.run();
    f.submit(make_request(2, b, 1, 10));
    f.run();
    REQUIRE(f.runtime.tree().cached_pages() == 8);
    f.submit(make_request(3, run_of(24, 2000), 1));
    f.run();
    const bool by_priority = std::string_view(policy) == "priority";
    CHECK(f.runtime.tree().peek(0, a) == (by_priority ? 16 : 8));
    CHECK(f.runtime.tree().peek(0, b) == (by_priority ? 8 : 16));
    f.check_no_leak();
  }
}

TEST_CASE("sharing holds a request behind any request in prefill with its page, urgent or not") {
  // P = 4, chunks of 10 tokens, starve_steps 1. K = a page of 4 tokens; A = K + 1 token,
  // B = K + 2, C = K + 2 other tokens; X = 23 unrelated tokens; no answers.
  // Steps 1-3: X's prefill (10, 10, 3 tokens). Step 3: A and B have waited three steps and are
  // urgent: A is admitted (5 tokens, the whole prompt), leading K; B is admitted past it, not
  // held (2 of 6 tokens). A and X finish; then everything cached is evicted, K too, so only B,
  // still in prefill, computes K. Step 4: B's last 4 tokens; C's first uncached page is K, so C
  // is held behind B, though B is not the request that led K. B finishes and caches K. Step 5:
  // C is admitted and hits K.
  SchedulerConfig config = config_for("share", 8);
  config.chunk_tokens = 10;
  config.starve_steps = 1;
  SchedulerFixture f(4, 64, config);
  const auto k = run_of(4, 0);
  f.submit(make_request(1, run_of(23, 1000), 0));           // X
  f.submit(make_request(2, concat(k, run_of(1, 100)), 0));  // A
  f.submit(make_request(3, concat(k, run_of(2, 200)), 0));  // B
  for (int i = 0; i < 2; ++i) CHECK(f.scheduler.step().admitted.size() == (i == 0 ? 1 : 0));
  const StepReport& third = f.scheduler.step();
  CHECK(third.admitted == std::vector<uint64_t>{2, 3});
  CHECK(third.finished == std::vector<uint64_t>{1, 2});
  f.runtime.evict(1000);
  REQUIRE(f.runtime.tree().cached_pages() == 0);
  f.submit(make_request(4, concat(k, run_of(2, 300)), 0));  // C
  const StepReport& fourth = f.scheduler.step();
  CHECK(fourth.held == std::vector<uint64_t>{4});
  CHECK(fourth.admitted.empty());
  CHECK(fourth.finished == std::vector<uint64_t>{3});
  CHECK(f.scheduler.step().admitted == std::vector<uint64_t>{4});
  f.run();
  CHECK(f.scheduler.stats().hit_tokens == 4);
  f.check_no_leak();
}

TEST_CASE("admission leaves a page of decode room for every running request") {
  // P = 4, 8 pages. A: 8 prompt tokens (2 pages), 9 answer tokens. B: 24 prompt tokens (6
  // pages). Step 1 admits A; B would fit the 6 free pages, but not with a page of decode room
  // for A (6 + 1 > 6), so it waits. Admitted anyway, it would take the page A's first decode
  // token needs, and the next step would preempt it. A holds at most 16 tokens (4 pages): B
  // waits until A has finished, after its 9th answer token in step 9, and is admitted in step 10.
  SchedulerFixture f(4, 8, config_for("fcfs", 8));
  f.submit(make_request(1, run_of(8, 0), 9));
  f.submit(make_request(2, run_of(24, 100), 1));
  CHECK(f.scheduler.step().admitted == std::vector<uint64_t>{1});
  for (int step = 2; step <= 9; ++step) {
    CAPTURE(step);
    const StepReport& report = f.scheduler.step();
    CHECK(report.admitted.empty());
    CHECK(report.preempted.empty());
    CHECK(report.finished == (step == 9 ? std::vector<uint64_t>{1} : std::vector<uint64_t>{}));
  }
  CHECK(f.scheduler.step().admitted == std::vector<uint64_t>{2});
  f.run();
  CHECK(f.scheduler.stats().preemptions == 0);
  f.check_no_leak();
}
