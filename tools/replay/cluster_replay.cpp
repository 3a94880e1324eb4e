#include "tools/replay/cluster_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>

#include "events/block_hash.h"
#include "events/event_batcher.h"
#include "kv_store/page_pool.h"
#include "router/block_index.h"
#include "router/overlap_gap.h"
#include "tools/replay/engine_parts.h"
#include "tools/replay/run_checks.h"

namespace radixkv::tools {

namespace {

using WallClock = std::chrono::steady_clock;

events::EventBatcherOptions batcher_options(uint32_t page_tokens) {
  events::EventBatcherOptions options;
  options.page_tokens = page_tokens;
  options.clock = [] { return 0.0; };  // batches are stamped with the simulated clock instead
  return options;
}

// One engine: its pool, the batcher its runtime reports to, the runtime, the scheduler, and its
// clock. Not movable (the batcher's sink points at it).
struct Worker {
  Worker(const ClusterReplayConfig& config, uint32_t number)
      : id(number),
        pool(config.engine.layout, static_cast<uint32_t>(config.engine.pool_pages)),
        batcher(batcher_options(config.engine.layout.page_tokens),
                [this](events::EventBatch&& batch) { produced.push_back(std::move(batch)); }),
        runtime(std::make_unique<PrefixCacheRuntime>(
            pool,
            RuntimeConfig{pool.capacity_bytes(), config.engine.high_watermark,
                          config.engine.low_watermark, config.engine.policy},
            TierConfig::with_events(&batcher))),
        scheduler(std::make_unique<Scheduler>(*runtime, scheduler_config(config.engine, true))) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  bool has_work() const { return !scheduler->idle() || !queued.empty(); }

  const uint32_t id;
  PagePool pool;
  events::EventBatcher batcher;
  std::unique_ptr<PrefixCacheRuntime> runtime;
  std::unique_ptr<Scheduler> scheduler;
  std::deque<SchedRequest> queued;                         // routed, not yet in the scheduler
  std::vector<events::EventBatch> produced;                // by the step running now
  std::deque<std::pair<double, events::EventBatch>> sent;  // (delivered at, batch), in time order
  double now = 0;
  double load = 0;  // blocks of unfinished requests routed here
  ClusterWorkerResult result;
  uint64_t peak_cached_pages = 0;
};

class ClusterRunner {
 public:
  ClusterRunner(const Trace& trace, const ClusterReplayConfig& config)
      : trace_(trace),
        config_(config),
        page_tokens_(config.engine.layout.page_tokens),
        router_(config.route, config.workers, config.weights),
        index_(static_cast<size_t>(config.workers) * config.engine.pool_pages + 1),
        expander_(trace),
        blocks_(trace.requests.size(), 0.0),
        predicted_(trace.requests.size(), 0) {
    if (!std::isfinite(config.event_delay_s) || config.event_delay_s < 0) {
      throw std::invalid_argument(fmt::format(
          "the event delay must be a finite number of seconds >= 0, got {}", config.event_delay_s));
    }
    for (uint32_t w = 0; w < config.workers; ++w) {
      workers_.push_back(std::make_unique<Worker>(config, w));
      index_.add_worker(fmt::format("worker{}", w));  // WorkerId w
    }
    ttft_.reserve(trace.requests.size());
  }

  void run(ReplayResult& result);

 private:
  double arrival(std::size_t position) const { return trace_.requests[order_[position]].arrival_s; }
  Worker* earliest_busy_worker();
  Worker* earliest_delivery();
  void deliver(Worker& w);
  void route(uint32_t index, double time);
  void step(Worker& w);
  void finish(ReplayResult& result);

  const Trace& trace_;
  const ClusterReplayConfig& config_;
  const uint32_t page_tokens_;
  ClusterRouter router_;
  router::BlockIndex index_;
  TokenExpander expander_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<uint32_t> order_;
  std::vector<double> blocks_;       // per trace request: its blocks, counted in its worker's load
  std::vector<uint64_t> predicted_;  // per trace request: the hit the router predicted
  std::vector<double> ttft_;
  ClusterResult cluster_;
  double last_finish_ = 0;
  uint64_t finished_ = 0;
};

Worker* ClusterRunner::earliest_busy_worker() {
  Worker* earliest = nullptr;
  for (const auto& w : workers_) {
    if (w->has_work() && (earliest == nullptr || w->now < earliest->now)) earliest = w.get();
  }
  return earliest;
}

// The worker whose oldest undelivered batch is due first; ties: the smaller number.
Worker* ClusterRunner::earliest_delivery() {
  Worker* earliest = nullptr;
  for (const auto& w : workers_) {
    if (!w->sent.empty() &&
        (earliest == nullptr || w->sent.front().first < earliest->sent.front().first)) {
      earliest = w.get();
    }
  }
  return earliest;
}

void ClusterRunner::deliver(Worker& w) {
  index_.apply(w.id, w.sent.front().second);
  ++cluster_.event_batches;
  w.sent.pop_front();
}

void ClusterRunner::route(uint32_t index, double time) {
  SchedRequest request = sched_request(trace_, expander_, index);
  const std::vector<events::BlockHash> hashes =
      events::prefix_block_hashes(request.name_space, request.prompt, page_tokens_);
  RouteRecord record;
  record.request = index;
  record.time = time;
  record.overlaps = index_.overlaps(hashes);
  for (const auto& w : workers_) record.loads.push_back(w->load);
  record.request_blocks = static_cast<double>(request.prompt.size()) / page_tokens_;
  record.chosen = router_.choose(record.overlaps, record.loads, record.request_blocks);
  record.predicted_hit_tokens = router::predicted_hit_tokens(
      uint64_t{record.overlaps[record.chosen]} * page_tokens_, request.prompt.size(), page_tokens_);
  predicted_[index] = record.predicted_hit_tokens;
  if (record.overlaps[record.chosen] > 0) ++cluster_.routed_to_overlap;
  if (config_.on_route) config_.on_route(record);

  Worker& w = *workers_[record.chosen];
  if (!w.has_work()) w.now = std::max(w.now, time);  // it was waiting for work
  blocks_[index] = record.request_blocks;
  w.load += record.request_blocks;
  w.result.peak_load_blocks = std::max(w.result.peak_load_blocks, w.load);
  ++w.result.requests;
  cluster_.total.output_tokens += trace_.requests[index].output_tokens;
  w.queued.push_back(std::move(request));
}

void ClusterRunner::step(Worker& w) {
  while (!w.queued.empty() && w.scheduler->waiting() < config_.engine.window) {
    if (!w.scheduler->submit(std::move(w.queued.front()))) ++cluster_.total.rejected;
    w.queued.pop_front();
  }
  w.runtime->set_now(w.now);
  const StepReport& step = w.scheduler->step();
  const double cost = config_.engine.cost.step_seconds(step.prefill_tokens, step.decode_tokens);
  w.now += cost;
  w.result.busy_seconds += cost;
  for (const FirstAdmission& a : step.first_admitted) {
    w.result.overlap.add(predicted_[a.id], a.reused_tokens);
  }
  for (uint64_t id : step.first_token) ttft_.push_back(w.now - trace_.requests[id].arrival_s);
  for (uint64_t id : step.finished) w.load -= blocks_[id];
  if (!step.finished.empty()) last_finish_ = std::max(last_finish_, w.now);
  finished_ += step.finished.size();
  cluster_.total.rejected += step.rejected.size();
  cluster_.total.peak_running =
      std::max<uint64_t>(cluster_.total.peak_running, step.running + step.finished.size());
  w.peak_cached_pages = std::max(w.peak_cached_pages, w.runtime->tree().cached_pages());
  // The step's changes reach the router the event delay after it ends.
  for (events::EventBatch& batch : w.produced) {
    w.sent.emplace_back(w.now + config_.event_delay_s, std::move(batch));
  }
  w.produced.clear();
  if (!step.worked() && step.admitted.empty() && step.preempted.empty() && step.finished.empty() &&
      step.rejected.empty()) {
    throw std::logic_error(fmt::format(
        "cluster replay: worker {}'s scheduler made no progress with {} running and {} waiting",
        w.id, w.scheduler->running(), w.scheduler->waiting()));
  }
}

void ClusterRunner::run(ReplayResult& result) {
  order_ = arrival_order(trace_, result.engine.out_of_order);
  const std::size_t total = order_.size();
  const WallClock::time_point start = WallClock::now();
  const double first_arrival = total == 0 ? 0.0 : arrival(0);
  for (const auto& w : workers_) w->now = first_arrival;
  last_finish_ = first_arrival;
  std::size_t next = 0;
  uint64_t reported = 0;
  while (true) {
    Worker* busy = earliest_busy_worker();
    Worker* sender = next < total ? earliest_delivery() : nullptr;  // none after the last arrival
    if (sender != nullptr && sender->sent.front().first <= arrival(next) &&
        (busy == nullptr || sender->sent.front().first <= busy->now)) {
      deliver(*sender);
    } else if (next < total && (busy == nullptr || arrival(next) <= busy->now)) {
      route(order_[next], arrival(next));
      ++next;
    } else if (busy != nullptr) {
      step(*busy);
    } else {
      break;
    }
    if (config_.engine.progress && finished_ - reported >= 4096) {
      reported = finished_;
      config_.engine.progress(finished_, total);
    }
  }
  result.wall_seconds = std::chrono::duration<double>(WallClock::now() - start).count();
  if (config_.engine.progress) config_.engine.progress(total, total);
  cluster_.total.simulated_seconds = last_finish_ - first_arrival;
  cluster_.total.finished = finished_;
  finish(result);
}

void ClusterRunner::finish(ReplayResult& result) {
  LatencyRecorder admit, finish;
  double busiest = 0, busy_sum = 0;
  for (const auto& w : workers_) {
    const SchedulerStats& stats = w->scheduler->stats();
    w->result.prompt_tokens = stats.prompt_tokens;
    w->result.hit_tokens = stats.hit_tokens;
    w->result.preemptions = stats.preemptions;
    w->result.evicted_pages = w->runtime->stats().evicted_pages;
    cluster_.total.steps += stats.steps;
    cluster_.total.preemptions += stats.preemptions;
    cluster_.total.readmitted += stats.readmitted;
    cluster_.total.held += stats.held;
    cluster_.total.hit_tokens += stats.hit_tokens;
    cluster_.total.prefill_tokens += stats.prefill_tokens;
    cluster_.total.peak_waiting = std::max(cluster_.total.peak_waiting, stats.peak_waiting);
    for (uint64_t ns : w->scheduler->admit_ns()) admit.add_ns(ns);
    for (uint64_t ns : w->scheduler->finish_ns()) finish.add_ns(ns);
    busiest = std::max(busiest, w->result.busy_seconds);
    busy_sum += w->result.busy_seconds;
    cluster_.overlap += w->result.overlap;

    result.inserted_pages += w->runtime->stats().committed_pages;
    result.evicted_pages += w->result.evicted_pages;
    result.evicted_nodes += w->runtime->tree().stats().evicted_nodes;
    result.peak_cached_pages = std::max(result.peak_cached_pages, w->peak_cached_pages);
    result.final_cached_pages += w->runtime->tree().cached_pages();
    if (const std::string error = check_end_of_run(*w->runtime);
        !error.empty() && result.accounting_error.empty()) {
      result.accounting_error = fmt::format("worker {}: {}", w->id, error);
    }
    result.high_watermark_pages = w->runtime->budget().high_pages();
    result.low_watermark_pages = w->runtime->budget().low_pages();
    w->scheduler.reset();
    w->runtime.reset();  // the tree releases every page it still indexes
    result.pages_leaked += w->pool.capacity_pages() - w->pool.free_pages();
    cluster_.per_worker.push_back(w->result);
  }
  const double mean = busy_sum / static_cast<double>(workers_.size());
  cluster_.load_imbalance = mean > 0 ? busiest / mean : 1.0;
  summarise_ttft(ttft_, cluster_.total);
  result.hit_tokens = cluster_.total.hit_tokens;
  result.cache_seconds = admit.total_seconds() + finish.total_seconds();
  result.admit = admit.summary();
  result.finish = finish.summary();
  result.cluster = std::move(cluster_);
}

}  // namespace

ReplayResult replay_cluster(const Trace& trace, const ClusterReplayConfig& config) {
  check_engine_config(trace, config.engine);
  ClusterRunner runner(trace, config);  // checks the workers and the weight
  ReplayResult result =
      start_replay_result("cluster", config.engine.policy, trace, config.engine.model,
                          config.engine.layout, config.engine.pool_pages);
  ClusterResult& cluster = result.cluster;
  runner.run(result);
  cluster.workers = config.workers;
  cluster.route = std::string(to_string(config.route));
  cluster.overlap_weight = config.weights.overlap_score_weight;
  cluster.event_delay_s = config.event_delay_s;
  cluster.schedule = config.engine.schedule;
  cluster.cost = config.engine.cost;
  return result;
}

}  // namespace radixkv::tools
