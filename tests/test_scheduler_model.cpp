// The scheduler against its naive reference model (tests/scheduler_model.h), step by step, on
// seeded random workloads: every schedule, caching on and off, tight pools (preemption,
// protection, starvation), chunk budgets that split prompts, small scan and lpm limits. After
// every step the step reports, every request's state, the statistics and the two runtimes'
// statistics must be equal. Set RADIXKV_SEED to replay one workload.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstdlib>
#include <random>

#include "tests/scheduler_model.h"

using namespace radixkv;
using radixkv::testing::SchedulerModel;

namespace {

std::string text(const StepReport& r) {
  return fmt::format(
      "prefill {} decode {} running {} admitted {} held {} first {} finished {} rejected {} "
      "preempted {}",
      r.prefill_tokens, r.decode_tokens, r.running, r.admitted, r.held, r.first_token, r.finished,
      r.rejected, r.preempted);
}

std::string text(const std::vector<SchedRequestState>& requests) {
  std::string out;
  for (const SchedRequestState& s : requests) {
    out += fmt::format("[{} {} {}/{} reused {} sampled {} preempted {}{}] ", s.id,
                       to_string(s.phase), s.computed, s.tokens, s.reused, s.sampled, s.preemptions,
                       s.urgent ? " urgent" : "");
  }
  return out;
}

std::string text(const SchedulerStats& s) {
  return fmt::format(
      "steps {} submitted {} admitted {} readmitted {} finished {} rejected {} preemptions {} "
      "held {} lpm_steps {} prompt {} hit {} prefill {} decode {} peak waiting {} running {}",
      s.steps, s.submitted, s.admitted, s.readmitted, s.finished, s.rejected, s.preemptions, s.held,
      s.lpm_steps, s.prompt_tokens, s.hit_tokens, s.prefill_tokens, s.decode_tokens, s.peak_waiting,
      s.peak_running);
}

// The runtime as the scheduler's calls left it: equal only if both made the same calls.
std::string text(const PrefixCacheRuntime& rt) {
  const RuntimeStats& s = rt.stats();
  return fmt::format(
      "admits {} no space {} too large {} extend no space {} finishes {} aborts {} prompt {} "
      "reused {} prefill {} decode {} committed {} duplicate {} evicted {}; free {} cached {} "
      "evictable {} live {}",
      s.admits, s.admit_no_space, s.admit_too_large, s.extend_no_space, s.finishes, s.aborts,
      s.prompt_tokens, s.reused_tokens, s.prefill_tokens, s.decode_tokens, s.committed_pages,
      s.duplicate_pages, s.evicted_pages, rt.pool().free_pages(), rt.tree().cached_pages(),
      rt.tree().evictable_pages(), rt.live_sequences());
}

template <typename T>
T pick(std::mt19937_64& rng, std::initializer_list<T> choices) {
  return choices.begin()[rng() % choices.size()];
}

struct Workload {
  uint32_t page_tokens = 4;
  uint32_t pool_pages = 0;
  SchedulerConfig config;
  RuntimeConfig runtime;
  // arrivals[s]: the requests submitted just before step s + 1.
  std::vector<std::vector<SchedRequest>> arrivals;

  std::string describe() const {
    return fmt::format(
        "P {} pool {} pages, {}{}{}, max_running {} chunk {} lpm_max_queue {} scan_limit {} "
        "starve_steps {} max_preemptions {}, eviction {} watermarks {}/{}",
        page_tokens, pool_pages, to_string(config.policy), config.share_prefixes ? "+share" : "",
        config.use_cache ? "" : " without cache", config.max_running, config.chunk_tokens,
        config.lpm_max_queue, config.scan_limit, config.starve_steps, config.max_preemptions,
        runtime.policy.spec(), runtime.high_watermark.to_string(),
        runtime.low_watermark.to_string());
  }
};

// Requests over a few shared prefixes (so lpm and sharing have something to order by), in two
// namespaces (the same tokens in another namespace share nothing), some continuing an earlier
// request's prompt and answer (a later turn), in a pool a few requests fill. Seeds cycle through
// the four schedules.
Workload random_workload(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Workload w;
  const uint32_t P = w.page_tokens = pick<uint32_t>(rng, {1, 2, 4, 8});
  w.config = SchedulerConfig::from_schedule(
      std::array<const char*, 4>{"fcfs", "lpm", "share", "lpm-share"}[seed % 4]);
  w.config.use_cache = rng() % 8 != 0;
  w.config.max_running = pick<uint32_t>(rng, {1, 2, 3, 5, 8, 256});
  w.config.chunk_tokens = pick<uint32_t>(rng, {1, 3, P, 2 * P + 1, 5 * P, 8192});
  w.config.lpm_max_queue = pick<uint32_t>(rng, {1, 4, 128});
  w.config.scan_limit = pick<uint32_t>(rng, {1, 2, 1024});
  w.config.starve_steps = pick<uint32_t>(rng, {0, 2, 6, 20, 2000});
  w.config.max_preemptions = pick<uint32_t>(rng, {1, 1, 2, 3});
  const std::vector<std::string_view> policies = policy_names();
  w.runtime.policy = std::string(policies[rng() % policies.size()]);
  const double high = pick<double>(rng, {0.6, 0.9, 1.0});
  w.runtime.high_watermark = high;
  w.runtime.low_watermark = high * pick<double>(rng, {0.5, 0.8, 1.0});

  std::vector<std::vector<TokenId>> prefixes;
  for (int i = 0; i < 4; ++i) {
    prefixes.emplace_back(P * (1 + rng() % 5) + rng() % P);
    for (TokenId& t : prefixes.back()) t = static_cast<TokenId>(rng() % 50);
  }
  const std::size_t requests = 12 + rng() % 30;
  const uint32_t answer_pages = pick<uint32_t>(rng, {1, 4, 8, 16});
  uint32_t largest = 0;
  std::vector<SchedRequest> made;
  w.arrivals.resize(pick<std::size_t>(rng, {1, 3, 8, 24}));  // from one burst to a trickle
  std::size_t arrival = 0;
  for (std::size_t k = 0; k < requests; ++k) {
    SchedRequest r;
    r.id = 1000 + k;
    r.priority = pick<int32_t>(rng, {kMinPriority, 35, 35, 90, kMaxPriority});
    const uint64_t kind = rng() % 8;
    if (kind < 2 && !made.empty()) {  // a later turn of an earlier request
      const SchedRequest& before = made[rng() % made.size()];
      r.name_space = before.name_space;
      r.prompt = before.prompt;
      r.prompt.insert(r.prompt.end(), before.answer.begin(), before.answer.end());
      arrival = rng() % w.arrivals.size();
    } else if (kind < 4 && !made.empty()) {  // a sibling: the same start at the same time
      r.name_space = made.back().name_space;
      r.prompt = made.back().prompt;
      r.prompt.resize(r.prompt.size() - std::min<std::size_t>(r.prompt.size() - 1, 1 + rng() % P));
    } else {
      const std::size_t prefix = rng() % prefixes.size();
      r.prompt = prefixes[prefix];
      // Mostly the prefix's own namespace; now and then the same tokens in the other one.
      r.name_space = static_cast<Namespace>((prefix + (rng() % 4 == 0)) % 2);
      arrival = rng() % w.arrivals.size();
    }
    for (std::size_t n = 1 + rng() % (3 * P); n > 0; --n) {
      r.prompt.push_back(static_cast<TokenId>(100 + rng() % 1000));
    }
    r.answer.resize(rng() % (answer_pages * P + 2));
    for (TokenId& t : r.answer) t = static_cast<TokenId>(2000 + rng() % 1000);
    largest = std::max(largest, static_cast<uint32_t>(
                                    Scheduler::pages_needed(r.prompt.size(), r.answer.size(), P)));
    made.push_back(r);
    w.arrivals[arrival].push_back(std::move(r));
  }
  // From a pool the largest requests do not fit (submit refuses them) to one with room for
  // several at once.
  w.pool_pages = std::max<uint32_t>(1, largest * pick<uint32_t>(rng, {4, 5, 8, 12}) / 5);
  return w;
}

// What the random workloads reached, summed: each rule must have been exercised.
struct Reached {
  uint64_t steps = 0, preemptions = 0, held = 0, lpm_steps = 0, split_prompts = 0, readmitted = 0,
           refused_submits = 0, runs_without_cache = 0, hit_tokens = 0;
  SchedulerModel::Events events;
};

// Runs one workload through the real scheduler and the model side by side, stopping at the first
// difference (the failed REQUIRE shows both sides).
void compare(const Workload& w, Reached& reached) {
  const KvLayout layout{1, 1, 4, 2, w.page_tokens};
  PagePool pool(layout, w.pool_pages), model_pool(layout, w.pool_pages);
  PrefixCacheRuntime runtime(pool, w.runtime), model_runtime(model_pool, w.runtime);
  Scheduler scheduler(runtime, w.config);
  SchedulerModel model(model_runtime, w.config);
  if (!w.config.use_cache) ++reached.runs_without_cache;

  for (uint64_t s = 0; s < 100000; ++s) {
    if (s < w.arrivals.size()) {
      for (const SchedRequest& r : w.arrivals[s]) {
        const bool accepted = scheduler.submit(r);
        REQUIRE(accepted == model.submit(r));
        if (!accepted) ++reached.refused_submits;
      }
    } else if (scheduler.idle()) {
      break;
    }
    const std::string before_text = text(scheduler.requests());
    INFO("step ", s + 1, ", requests before it: ", before_text);
    const StepReport& real = scheduler.step();
    const StepReport& expected = model.step();
    REQUIRE(text(real) == text(expected));
    const std::vector<SchedRequestState> after = scheduler.requests();
    REQUIRE(text(after) == text(model.requests()));
    REQUIRE(text(scheduler.stats()) == text(model.stats()));
    REQUIRE(text(runtime) == text(model_runtime));
    if (s % 16 == 0) runtime.check_accounting();

    ++reached.steps;
    // The budget goes to one prompt at a time, so at most one is part way through its prefill.
    std::size_t in_prefill = 0;
    for (const SchedRequestState& a : after) in_prefill += a.phase == SchedPhase::kPrefill;
    CHECK(in_prefill <= 1);
    reached.split_prompts += in_prefill;
  }
  REQUIRE(scheduler.idle());
  REQUIRE(model.idle());
  CHECK(runtime.check_accounting() == 0);
  const SchedulerStats& stats = scheduler.stats();
  reached.preemptions += stats.preemptions;
  reached.held += stats.held;
  reached.lpm_steps += stats.lpm_steps;
  reached.readmitted += stats.readmitted;
  reached.hit_tokens += stats.hit_tokens;
  SchedulerModel::Events& sum = reached.events;
  const SchedulerModel::Events& e = model.events();
  sum.memory_stops += e.memory_stops;
  sum.no_space_stops += e.no_space_stops;
  sum.protected_victims += e.protected_victims;
  sum.self_preemptions += e.self_preemptions;
  sum.urgent_admissions += e.urgent_admissions;
  sum.urgent_past_holder += e.urgent_past_holder;
  sum.lpm_jumps += e.lpm_jumps;
}

}  // namespace

TEST_CASE("scheduler model: random workloads agree with the naive reference step by step") {
  const char* forced = std::getenv("RADIXKV_SEED");
  const uint64_t first = forced ? std::strtoull(forced, nullptr, 0) : 1;
  const uint64_t last = forced ? first : 400;
  Reached reached;
  for (uint64_t seed = first; seed <= last; ++seed) {
    const Workload w = random_workload(seed);
    INFO("seed ", seed, " (rerun with RADIXKV_SEED=", seed, "): ", w.describe());
    compare(w, reached);
  }
  if (forced) return;
  // Every rule was exercised, not only agreed on.
  const SchedulerModel::Events& e = reached.events;
  MESSAGE(fmt::format(
      "{} steps: preemptions {} (protected victims {}, of themselves {}), readmitted {}, urgent "
      "admissions {} (past a holder of their key {}), held {}, lpm steps {} (admissions past an "
      "earlier request {}), memory stops {}, no-space stops {}, split prompts {}, refused "
      "submits {}, runs without cache {}, hit tokens {}",
      reached.steps, reached.preemptions, e.protected_victims, e.self_preemptions,
      reached.readmitted, e.urgent_admissions, e.urgent_past_holder, reached.held,
      reached.lpm_steps, e.lpm_jumps, e.memory_stops, e.no_space_stops, reached.split_prompts,
      reached.refused_submits, reached.runs_without_cache, reached.hit_tokens));
  CHECK(reached.preemptions > 100);
  CHECK(e.protected_victims > 10);
  CHECK(e.self_preemptions > 10);
  CHECK(reached.readmitted > 100);
  CHECK(e.urgent_admissions > 100);
  CHECK(e.urgent_past_holder > 5);
  CHECK(reached.held > 50);
  CHECK(reached.lpm_steps > 1000);
  CHECK(e.lpm_jumps > 50);
  CHECK(e.memory_stops > 100);
  CHECK(e.no_space_stops > 10);
  CHECK(reached.split_prompts > 500);
  CHECK(reached.refused_submits > 10);
  CHECK(reached.runs_without_cache > 20);
  CHECK(reached.hit_tokens > 1000);
}
