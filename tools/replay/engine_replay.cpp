#include "tools/replay/engine_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "kv_store/page_pool.h"
#include "runtime/prefix_cache_runtime.h"
#include "tools/replay/percentile.h"

namespace radixkv::tools {

namespace {

using Clock = std::chrono::steady_clock;

void check_fits(const Trace& trace, const EngineReplayConfig& config) {
  const uint32_t page_tokens = config.layout.page_tokens;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const TraceRequest& r = trace.requests[i];
    const uint64_t needed = Scheduler::pages_needed(r.input_tokens, r.output_tokens, page_tokens);
    if (needed > config.pool_pages) {
      throw PoolTooSmall(fmt::format(
          "the KV pool holds {} pages ({} tokens of {}), too small for request {} (id {}): its "
          "{} prompt and {} answer tokens need {} pages while it runs",
          config.pool_pages, config.pool_pages * page_tokens, config.model, i, r.id, r.input_tokens,
          r.output_tokens, needed));
    }
  }
}

// What one run measures beyond EngineRun: the cache's side, for the report of the primary run.
struct CacheSide {
  uint64_t inserted_pages = 0, evicted_pages = 0, evicted_nodes = 0;
  uint64_t peak_cached_pages = 0, final_cached_pages = 0, pages_leaked = 0;
  std::string accounting_error;
  double wall_seconds = 0;
  LatencyRecorder admit, finish;
};

EngineRun run_once(const Trace& trace, const EngineReplayConfig& config, bool use_cache,
                   CacheSide& side) {
  SchedulerConfig sched_config = config.scheduler;
  const SchedulerConfig policy = SchedulerConfig::from_schedule(config.schedule);
  sched_config.policy = policy.policy;
  sched_config.share_prefixes = policy.share_prefixes;
  sched_config.use_cache = use_cache;
  sched_config.time_calls = true;

  PagePool pool(config.layout, static_cast<uint32_t>(config.pool_pages));
  auto runtime =
      std::make_unique<PrefixCacheRuntime>(pool, RuntimeConfig{0, 0.95, 0.85, config.policy});
  auto scheduler = std::make_unique<Scheduler>(*runtime, sched_config);

  const std::size_t total = trace.requests.size();
  TokenExpander expander(trace);
  std::vector<double> ttft;
  ttft.reserve(total);
  EngineRun run;
  run.cache = use_cache;

  const auto submit = [&](std::size_t i) {
    const TraceRequest& r = trace.requests[i];
    SchedRequest request;
    request.id = i;
    request.name_space = r.ns;
    request.priority = r.priority;
    const std::span<const TokenId> prompt = expander.expand(i);
    request.prompt.assign(prompt.begin(), prompt.end());
    append_content(answer_key(r), 0, r.output_tokens, request.answer);
    run.output_tokens += r.output_tokens;
    if (!scheduler->submit(std::move(request))) ++run.rejected;
  };

  const Clock::time_point start = Clock::now();
  double first_arrival = total == 0 ? 0.0 : trace.requests[0].arrival_s;
  for (const TraceRequest& r : trace.requests) first_arrival = std::min(first_arrival, r.arrival_s);
  double now = first_arrival, last_finish = first_arrival;
  std::size_t next = 0;
  uint64_t reported = 0;
  while (next < total || !scheduler->idle()) {
    while (next < total && trace.requests[next].arrival_s <= now &&
           scheduler->waiting() < config.window) {
      submit(next++);
    }
    if (scheduler->idle()) {  // nothing to run until the next arrival
      if (next < total) now = std::max(now, trace.requests[next].arrival_s);
      continue;
    }
    runtime->set_now(now);  // the priority policy's retention runs on the simulated clock
    const StepReport& step = scheduler->step();
    now += config.cost.step_seconds(step.prefill_tokens, step.decode_tokens);
    for (uint64_t id : step.first_token) ttft.push_back(now - trace.requests[id].arrival_s);
    if (!step.finished.empty()) last_finish = now;
    run.finished += step.finished.size();
    run.rejected += step.rejected.size();
    if (!step.worked() && step.admitted.empty() && step.preempted.empty() &&
        step.finished.empty() && step.rejected.empty()) {
      throw std::logic_error(fmt::format(
          "engine replay: the scheduler made no progress with {} running and {} waiting",
          scheduler->running(), scheduler->waiting()));
    }
    side.peak_cached_pages = std::max(side.peak_cached_pages, runtime->tree().cached_pages());
    if (config.progress && run.finished - reported >= 4096) {
      reported = run.finished;
      config.progress(run.finished, total);
    }
  }
  side.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (config.progress) config.progress(total, total);

  const SchedulerStats& stats = scheduler->stats();
  run.preemptions = stats.preemptions;
  run.readmitted = stats.readmitted;
  run.steps = stats.steps;
  run.held = stats.held;
  run.hit_tokens = stats.hit_tokens;
  run.prefill_tokens = stats.prefill_tokens;
  run.peak_running = stats.peak_running;
  run.peak_waiting = stats.peak_waiting;
  run.simulated_seconds = last_finish - first_arrival;
  std::sort(ttft.begin(), ttft.end());
  run.ttft_p50_s = percentile(ttft, 50);
  run.ttft_p90_s = percentile(ttft, 90);
  run.ttft_p99_s = percentile(ttft, 99);
  run.ttft_max_s = ttft.empty() ? 0.0 : ttft.back();
  double sum = 0;
  for (double t : ttft) sum += t;
  run.ttft_mean_s = ttft.empty() ? 0.0 : sum / static_cast<double>(ttft.size());

  for (uint64_t ns : scheduler->admit_ns()) side.admit.add_ns(ns);
  for (uint64_t ns : scheduler->finish_ns()) side.finish.add_ns(ns);
  side.inserted_pages = runtime->stats().committed_pages;
  side.evicted_pages = runtime->stats().evicted_pages;
  side.evicted_nodes = runtime->tree().stats().evicted_nodes;
  side.final_cached_pages = runtime->tree().cached_pages();
  // The end-of-run check with no live sequence: refcounts, the identity, tree.verify().
  try {
    const uint64_t private_pages = runtime->check_accounting();
    if (private_pages != 0 || runtime->live_sequences() != 0) {
      side.accounting_error = fmt::format("{} private pages and {} live sequences after the run",
                                          private_pages, runtime->live_sequences());
    } else if (runtime->tree().protected_pages() != 0) {
      side.accounting_error =
          fmt::format("{} cached pages still protected", runtime->tree().protected_pages());
    }
  } catch (const std::exception& e) {
    side.accounting_error = e.what();
  }
  scheduler.reset();
  runtime.reset();  // the tree releases every page it still indexes
  side.pages_leaked = pool.capacity_pages() - pool.free_pages();
  return run;
}

}  // namespace

ReplayResult replay_engine(const Trace& trace, const EngineReplayConfig& config) {
  if (config.pool_pages == 0 || config.pool_pages >= kInvalidPage) {
    throw std::invalid_argument(fmt::format("the KV pool must be between 1 and {} pages, got {}",
                                            kInvalidPage - 1, config.pool_pages));
  }
  if (config.window == 0) throw std::invalid_argument("engine replay: window must be at least 1");
  SchedulerConfig::from_schedule(config.schedule);  // a bad name throws before anything runs
  config.scheduler.validate();
  make_policy(config.policy);
  check_fits(trace, config);

  ReplayResult result = start_replay_result("engine", config.policy, trace, config.model,
                                            config.layout, config.pool_pages);

  CacheSide side;
  EngineResult& engine = result.engine;
  engine.schedule = config.schedule;
  engine.max_running = config.scheduler.max_running;
  engine.chunk_tokens = config.scheduler.chunk_tokens;
  engine.cost = config.cost;
  engine.run = run_once(trace, config, !config.no_cache, side);
  if (!config.no_cache && config.compare_no_cache) {
    CacheSide baseline_side;
    engine.no_cache = run_once(trace, config, false, baseline_side);
    if (baseline_side.pages_leaked != 0 || !baseline_side.accounting_error.empty()) {
      side.pages_leaked += baseline_side.pages_leaked;
      if (side.accounting_error.empty() && !baseline_side.accounting_error.empty()) {
        side.accounting_error = "run with caching off: " + baseline_side.accounting_error;
      }
    }
  }

  result.hit_tokens = engine.run.hit_tokens;
  result.inserted_pages = side.inserted_pages;
  result.evicted_pages = side.evicted_pages;
  result.evicted_nodes = side.evicted_nodes;
  result.peak_cached_pages = side.peak_cached_pages;
  result.final_cached_pages = side.final_cached_pages;
  result.pages_leaked = side.pages_leaked;
  result.accounting_error = side.accounting_error;
  result.wall_seconds = side.wall_seconds;
  result.cache_seconds = side.admit.total_seconds() + side.finish.total_seconds();
  result.admit = side.admit.summary();
  result.finish = side.finish.summary();
  return result;
}

}  // namespace radixkv::tools
