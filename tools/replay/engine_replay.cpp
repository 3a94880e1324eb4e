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
  uint64_t high_watermark_pages = 0, low_watermark_pages = 0;
  std::string accounting_error;
  double wall_seconds = 0;
  LatencyRecorder admit, finish;
};

// Request indices in arrival order: trace order where arrival times agree with it, and a stable
// sort by arrival where they do not (a request is never submitted before it arrives, nor held
// back behind a later arrival written above it).
std::vector<uint32_t> arrival_order(const Trace& trace, uint64_t& out_of_order) {
  std::vector<uint32_t> order(trace.requests.size());
  double latest = 0;
  out_of_order = 0;
  for (uint32_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    const double t = trace.requests[i].arrival_s;
    if (i > 0 && t < latest) ++out_of_order;
    latest = std::max(latest, t);
  }
  if (out_of_order > 0) {
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return trace.requests[a].arrival_s < trace.requests[b].arrival_s;
    });
  }
  return order;
}

void summarise_ttft(std::vector<double>& ttft, EngineRun& run) {
  std::sort(ttft.begin(), ttft.end());
  run.ttft_p50_s = percentile(ttft, 50);
  run.ttft_p90_s = percentile(ttft, 90);
  run.ttft_p99_s = percentile(ttft, 99);
  run.ttft_max_s = ttft.empty() ? 0.0 : ttft.back();
  double sum = 0;
  for (double t : ttft) sum += t;
  run.ttft_mean_s = ttft.empty() ? 0.0 : sum / static_cast<double>(ttft.size());
}

// The end-of-run check with no live sequence: refcounts, the identity, tree.verify().
std::string check_accounting(PrefixCacheRuntime& runtime) {
  try {
    const uint64_t private_pages = runtime.check_accounting();
    if (private_pages != 0 || runtime.live_sequences() != 0) {
      return fmt::format("{} private pages and {} live sequences after the run", private_pages,
                         runtime.live_sequences());
    }
    if (runtime.tree().protected_pages() != 0) {
      return fmt::format("{} cached pages still protected", runtime.tree().protected_pages());
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// One run over the whole trace: requests submitted at their arrival (in `order`), steps priced by
// the cost model, the clock jumping to the next arrival when the engine is idle.
class EngineRunner {
 public:
  EngineRunner(const Trace& trace, const EngineReplayConfig& config,
               const std::vector<uint32_t>& order, bool use_cache)
      : trace_(trace),
        config_(config),
        order_(order),
        pool_(config.layout, static_cast<uint32_t>(config.pool_pages)),
        runtime_(std::make_unique<PrefixCacheRuntime>(
            pool_, RuntimeConfig{0, config.high_watermark, config.low_watermark, config.policy})),
        scheduler_(std::make_unique<Scheduler>(*runtime_, scheduler_config(config, use_cache))),
        expander_(trace) {
    run_.cache = use_cache;
    ttft_.reserve(trace.requests.size());
  }

  EngineRun run(CacheSide& side);

 private:
  static SchedulerConfig scheduler_config(const EngineReplayConfig& config, bool use_cache) {
    SchedulerConfig sched = config.scheduler;
    const SchedulerConfig policy = SchedulerConfig::from_schedule(config.schedule);
    sched.policy = policy.policy;
    sched.share_prefixes = policy.share_prefixes;
    sched.use_cache = use_cache;
    sched.time_calls = true;
    return sched;
  }
  double arrival(std::size_t position) const { return trace_.requests[order_[position]].arrival_s; }
  void submit(uint32_t index);
  void step();
  void finish(CacheSide& side);

  const Trace& trace_;
  const EngineReplayConfig& config_;
  const std::vector<uint32_t>& order_;
  PagePool pool_;
  std::unique_ptr<PrefixCacheRuntime> runtime_;
  std::unique_ptr<Scheduler> scheduler_;
  TokenExpander expander_;
  std::vector<double> ttft_;
  EngineRun run_;
  double now_ = 0, last_finish_ = 0;
};

void EngineRunner::submit(uint32_t index) {
  const TraceRequest& r = trace_.requests[index];
  SchedRequest request;
  request.id = index;
  request.name_space = r.ns;
  request.priority = r.priority;
  const std::span<const TokenId> prompt = expander_.expand(index);
  request.prompt.assign(prompt.begin(), prompt.end());
  append_content(answer_key(r), 0, r.output_tokens, request.answer);
  run_.output_tokens += r.output_tokens;
  if (!scheduler_->submit(std::move(request))) ++run_.rejected;
}

void EngineRunner::step() {
  runtime_->set_now(now_);  // the priority policy's retention runs on the simulated clock
  const StepReport& step = scheduler_->step();
  now_ += config_.cost.step_seconds(step.prefill_tokens, step.decode_tokens);
  for (uint64_t id : step.first_token) ttft_.push_back(now_ - trace_.requests[id].arrival_s);
  if (!step.finished.empty()) last_finish_ = now_;
  run_.finished += step.finished.size();
  run_.rejected += step.rejected.size();
  // The batch this step ran: what still runs, and what finished in it (prefilled and done in one
  // step included).
  run_.peak_running = std::max<uint64_t>(run_.peak_running, step.running + step.finished.size());
  if (!step.worked() && step.admitted.empty() && step.preempted.empty() &&
      step.finished.empty() && step.rejected.empty()) {
    throw std::logic_error(
        fmt::format("engine replay: the scheduler made no progress with {} running and {} waiting",
                    scheduler_->running(), scheduler_->waiting()));
  }
}

EngineRun EngineRunner::run(CacheSide& side) {
  const std::size_t total = order_.size();
  const Clock::time_point start = Clock::now();
  const double first_arrival = total == 0 ? 0.0 : arrival(0);
  now_ = last_finish_ = first_arrival;
  std::size_t next = 0;
  uint64_t reported = 0;
  while (next < total || !scheduler_->idle()) {
    while (next < total && arrival(next) <= now_ && scheduler_->waiting() < config_.window) {
      submit(order_[next++]);
    }
    if (scheduler_->idle()) {  // nothing to run until the next arrival
      if (next < total) now_ = std::max(now_, arrival(next));
      continue;
    }
    step();
    side.peak_cached_pages = std::max(side.peak_cached_pages, runtime_->tree().cached_pages());
    if (config_.progress && run_.finished - reported >= 4096) {
      reported = run_.finished;
      config_.progress(run_.finished, total);
    }
  }
  side.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (config_.progress) config_.progress(total, total);
  run_.simulated_seconds = last_finish_ - first_arrival;
  finish(side);
  return run_;
}

void EngineRunner::finish(CacheSide& side) {
  const SchedulerStats& stats = scheduler_->stats();
  run_.preemptions = stats.preemptions;
  run_.readmitted = stats.readmitted;
  run_.steps = stats.steps;
  run_.held = stats.held;
  run_.hit_tokens = stats.hit_tokens;
  run_.prefill_tokens = stats.prefill_tokens;
  run_.peak_waiting = stats.peak_waiting;
  summarise_ttft(ttft_, run_);

  for (uint64_t ns : scheduler_->admit_ns()) side.admit.add_ns(ns);
  for (uint64_t ns : scheduler_->finish_ns()) side.finish.add_ns(ns);
  side.inserted_pages = runtime_->stats().committed_pages;
  side.evicted_pages = runtime_->stats().evicted_pages;
  side.evicted_nodes = runtime_->tree().stats().evicted_nodes;
  side.final_cached_pages = runtime_->tree().cached_pages();
  side.high_watermark_pages = runtime_->budget().high_pages();
  side.low_watermark_pages = runtime_->budget().low_pages();
  side.accounting_error = check_accounting(*runtime_);
  scheduler_.reset();
  runtime_.reset();  // the tree releases every page it still indexes
  side.pages_leaked = pool_.capacity_pages() - pool_.free_pages();
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
  const std::vector<uint32_t> order = arrival_order(trace, engine.out_of_order);
  engine.run = EngineRunner(trace, config, order, !config.no_cache).run(side);
  if (!config.no_cache && config.compare_no_cache) {
    CacheSide baseline_side;
    engine.no_cache = EngineRunner(trace, config, order, false).run(baseline_side);
    if (baseline_side.pages_leaked != 0 || !baseline_side.accounting_error.empty()) {
      side.pages_leaked += baseline_side.pages_leaked;
      if (side.accounting_error.empty() && !baseline_side.accounting_error.empty()) {
        side.accounting_error = "run with caching off: " + baseline_side.accounting_error;
      }
    }
  }

  result.high_watermark_pages = side.high_watermark_pages;
  result.low_watermark_pages = side.low_watermark_pages;
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
