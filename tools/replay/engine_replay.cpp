#include "tools/replay/engine_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "disk/disk_tier.h"
#include "kv_store/page_pool.h"
#include "remote/remote_tier.h"
#include "runtime/prefix_cache_runtime.h"
#include "tools/replay/engine_parts.h"
#include "tools/replay/run_checks.h"

namespace radixkv::tools {

namespace {

using Clock = std::chrono::steady_clock;

// What one run measures beyond EngineRun: the cache's side, for the report of the primary run.
struct CacheSide {
  uint64_t inserted_pages = 0, evicted_pages = 0, evicted_nodes = 0;
  uint64_t peak_cached_pages = 0, final_cached_pages = 0, pages_leaked = 0;
  uint64_t high_watermark_pages = 0, low_watermark_pages = 0;
  std::string accounting_error;
  double wall_seconds = 0;
  LatencyRecorder admit, finish;
  HostTierResult host;  // with a host tier
  uint64_t remote_hit_tokens = 0;
  std::optional<MissRatioCurve> mrc;
};

// One run over the whole trace: requests submitted at their arrival (in `order`), steps priced by
// the cost model, the clock jumping to the next arrival when the engine is idle.
class EngineRunner {
 public:
  // `host`: the host tier under the pool (nullptr: none). `primary`: the run the report describes,
  // which alone reports to config.events and config.at_end (not its baselines).
  EngineRunner(const Trace& trace, const EngineReplayConfig& config,
               const std::vector<uint32_t>& order, bool use_cache,
               const HostTierReplayConfig* host = nullptr, bool primary = false)
      : trace_(trace),
        config_(config),
        primary_(primary),
        order_(order),
        pool_(config.layout, static_cast<uint32_t>(config.pool_pages)),
        host_pages_(host_pages(pool_, trace, host)),
        runtime_(std::make_unique<PrefixCacheRuntime>(
            pool_,
            RuntimeConfig{pool_.capacity_bytes(), config.high_watermark, config.low_watermark,
                          config.policy},
            replay_tiers(
                host != nullptr ? *host : HostTierReplayConfig{}, host_pages_.get(),
                primary && use_cache ? lower_tiers(config.disk, config.remote, lower_) : nullptr,
                primary ? config.events : nullptr))),
        scheduler_(std::make_unique<Scheduler>(*runtime_, scheduler_config(config, use_cache))),
        expander_(trace) {
    run_.cache = use_cache;
    if (primary_ && config.miss_ratio_curve) runtime_->start_miss_ratio_curve();
    ttft_.reserve(trace.requests.size());
    if (host_pages_) {
      copies_.emplace(pool_.bytes_per_page(), host->h2d_gbps, host->d2h_gbps);
      loaded_at_.assign(pool_.capacity_pages(), 0.0);
      scheduler_->set_load_gate({[this](uint64_t id, const AdmitResult& r) { admitted(id, r); },
                                 [this](uint64_t id) { return load_ready(id); }});
    }
    if (primary && use_cache && config.disk != nullptr) {
      disk_ = config.disk;
      drive_.emplace(pool_.bytes_per_page(), config.disk_read_gbps, config.disk_write_gbps,
                     config.disk->config().queue_pages);
      disk_seen_ = config.disk->stats();
    }
  }

  EngineRun run(CacheSide& side);

 private:
  static std::unique_ptr<HostTierPages> host_pages(const PagePool& pool, const Trace& trace,
                                                   const HostTierReplayConfig* host);
  double remote_wait_seconds();
  double disk_wait_seconds();
  double arrival(std::size_t position) const { return trace_.requests[order_[position]].arrival_s; }
  uint64_t new_written_pages();
  void admitted(uint64_t id, const AdmitResult& r);
  bool load_ready(uint64_t id);
  bool wait_for_copies();
  void submit(uint32_t index);
  void step();
  void finish(CacheSide& side);

  const Trace& trace_;
  const EngineReplayConfig& config_;
  const bool primary_;
  const std::vector<uint32_t>& order_;
  PagePool pool_;
  std::unique_ptr<HostTierPages> host_pages_;  // outlives runtime_
  std::unique_ptr<LowerTiers> lower_;          // with a disk and a remote tier; as host_pages_
  std::unique_ptr<PrefixCacheRuntime> runtime_;
  std::unique_ptr<Scheduler> scheduler_;
  TokenExpander expander_;
  std::vector<double> ttft_;
  EngineRun run_;
  double now_ = 0, last_finish_ = 0;
  // With a host tier: the copy engines, and when each admitted request's copies are done.
  std::optional<CopyEngine> copies_;
  std::unordered_map<uint64_t, double> copies_done_;
  std::vector<double> loaded_at_;  // per device page (by id - first): when its last load ends
  uint64_t written_seen_ = 0;
  uint64_t remote_wait_seen_ns_ = 0;
  // With a disk tier (primary run only): its drive, and its counters at the last look.
  disk::DiskTier* disk_ = nullptr;
  std::optional<DiskEngine> drive_;
  disk::DiskTierStats disk_seen_;
  std::size_t next_arrival_ = 0;  // position in order_ of the next request to submit
};

std::unique_ptr<HostTierPages> EngineRunner::host_pages(const PagePool& pool, const Trace& trace,
                                                        const HostTierReplayConfig* host) {
  if (host == nullptr || !host->enabled()) return nullptr;
  // The host never holds more than every page the trace's requests hold, so a larger budget is
  // cut to that (the same run, without bookkeeping for pages never used). The pool has room for
  // one load beyond it: the longest prompt, or the whole device pool if smaller.
  const uint32_t page_tokens = pool.layout().page_tokens;
  uint64_t trace_pages = 0, largest = 0;
  for (const TraceRequest& r : trace.requests) {
    trace_pages += Scheduler::pages_needed(r.input_tokens, r.output_tokens, page_tokens);
    largest = std::max<uint64_t>(largest, r.input_tokens / page_tokens);
  }
  return std::make_unique<HostTierPages>(pool,
                                         std::clamp<uint64_t>(trace_pages, 1, host->capacity_pages),
                                         std::min<uint64_t>(largest, pool.capacity_pages()));
}

// Device pages copied to the host since the last call: each such copy occupies the D2H engine.
uint64_t EngineRunner::new_written_pages() {
  const uint64_t written = runtime_->tree().stats().written_pages;
  const uint64_t fresh = written - written_seen_;
  written_seen_ = written;
  return fresh;
}

// An admission at now_: the write-backs that made room for it, then its load (host hits and remote
// pages), each on its engine.
// Its device hits may be pages an earlier admission is still loading: it waits for those too (as
// the runtime's ticket covering that load says). A page's time stays after the page is reused,
// so a request may wait for a load into an earlier life of its page: never too little.
void EngineRunner::admitted(uint64_t id, const AdmitResult& r) {
  const uint32_t page_tokens = runtime_->page_tokens();
  const uint32_t device = r.device_hit_tokens / page_tokens;
  // Remote pages come through the host tier's staging pages: an H2D copy each, as host hits.
  const uint32_t loads = (r.host_hit_tokens + r.remote_hit_tokens) / page_tokens;
  const double written = copies_->write(now_, new_written_pages());
  const double loaded = copies_->load(written, loads);
  double ready = loaded;
  for (uint32_t i = 0; i < device; ++i) {
    ready = std::max(ready, loaded_at_[r.block_table[i] - pool_.first_page()]);
  }
  for (uint32_t i = device; i < device + loads; ++i) {
    loaded_at_[r.block_table[i] - pool_.first_page()] = loaded;
  }
  copies_done_[id] = ready;
}

// Wall time the remote tier's lookups have stalled this thread since the last call.
double EngineRunner::remote_wait_seconds() {
  if (!primary_ || config_.remote == nullptr) return 0;
  const uint64_t waited = config_.remote->stats().load_wait_ns;
  const uint64_t fresh = waited - remote_wait_seen_ns_;
  remote_wait_seen_ns_ = waited;
  return static_cast<double>(fresh) * 1e-9;
}

// Time the disk tier's drive has held this thread since the last call: the pages admit read from
// it, and any wait for room in its write queue.
double EngineRunner::disk_wait_seconds() {
  if (!drive_) return 0;
  const disk::DiskTierStats now = disk_->stats();
  const double wait = drive_->stall(now_, now.loaded_pages - disk_seen_.loaded_pages,
                                    now.queued_pages - disk_seen_.queued_pages);
  disk_seen_ = now;
  return wait;
}

bool EngineRunner::load_ready(uint64_t id) {
  const auto it = copies_done_.find(id);
  if (it == copies_done_.end()) return true;
  if (it->second > now_) return false;
  copies_done_.erase(it);
  return true;
}

// A step that did nothing while requests wait for their copies: the clock moves to the first
// copy done (or the next arrival, if sooner). False when no request waits.
bool EngineRunner::wait_for_copies() {
  if (scheduler_->loading() == 0) return false;
  double next = std::numeric_limits<double>::infinity();
  for (const auto& [id, done] : copies_done_) {
    if (done > now_) next = std::min(next, done);
  }
  if (next_arrival_ < order_.size() && arrival(next_arrival_) > now_) {
    next = std::min(next, arrival(next_arrival_));
  }
  if (!std::isfinite(next) || next <= now_) return false;
  now_ = next;
  return true;
}

void EngineRunner::submit(uint32_t index) {
  run_.output_tokens += trace_.requests[index].output_tokens;
  SchedRequest request = sched_request(trace_, expander_, index);
  // With a remote tier, its lookup starts now, while the request waits (RemoteTier::prefetch).
  runtime_->prefetch({request.id, request.name_space, request.prompt, request.priority});
  if (!scheduler_->submit(std::move(request))) ++run_.rejected;
}

void EngineRunner::step() {
  if (primary_ && config_.before_step) config_.before_step();
  runtime_->set_now(now_);  // the priority policy's retention runs on the simulated clock
  // Write-backs of the previous step's commits and finishes occupy the D2H engine from now.
  if (copies_) copies_->write(now_, new_written_pages());
  const StepReport& step = scheduler_->step();
  now_ += config_.cost.step_seconds(step.prefill_tokens, step.decode_tokens) +
          remote_wait_seconds() + disk_wait_seconds();
  for (uint64_t id : step.first_token) ttft_.push_back(now_ - trace_.requests[id].arrival_s);
  if (!step.finished.empty()) last_finish_ = now_;
  run_.finished += step.finished.size();
  run_.rejected += step.rejected.size();
  // The batch this step ran: what still runs, and what finished in it (prefilled and done in one
  // step included).
  run_.peak_running = std::max<uint64_t>(run_.peak_running, step.running + step.finished.size());
  if (!step.worked() && step.admitted.empty() && step.preempted.empty() && step.finished.empty() &&
      step.rejected.empty() && !wait_for_copies()) {
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
  std::size_t& next = next_arrival_;
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
    if (host_pages_) {
      side.host.peak_cached_pages =
          std::max(side.host.peak_cached_pages, runtime_->tree().host_cached_pages());
    }
    if (primary_ && config_.on_step) config_.on_step(*runtime_, false);
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
  side.remote_hit_tokens = stats.remote_hit_tokens;
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
  // The tiers below write in the background: their writes complete before the last exposition,
  // which then counts what the report does (it reads them drained, replay_result.h).
  if (primary_ && run_.cache) {
    if (config_.disk != nullptr) config_.disk->drain();
    if (config_.remote != nullptr) config_.remote->drain();
  }
  if (primary_ && config_.on_step) config_.on_step(*runtime_, true);
  side.mrc = runtime_->metrics().curve;
  side.accounting_error = check_end_of_run(*runtime_);
  if (host_pages_) {
    side.host.enabled = true;
    side.host.host_hit_tokens = stats.host_hit_tokens;
    side.host.device_hit_tokens = stats.hit_tokens - stats.host_hit_tokens;
    side.host.add_tree_stats(runtime_->tree().stats());
    side.host.final_cached_pages = runtime_->tree().host_cached_pages();
  }
  if (primary_ && config_.at_end) config_.at_end(runtime_->tree());
  scheduler_.reset();
  runtime_.reset();  // the tree releases every page it still indexes
  side.pages_leaked = pool_.capacity_pages() - pool_.free_pages();
  if (host_pages_) {
    side.pages_leaked += host_pages_->pool->capacity_pages() - host_pages_->pool->free_pages();
  }
}

}  // namespace

ReplayResult replay_engine(const Trace& trace, const EngineReplayConfig& config) {
  check_engine_config(trace, config);

  ReplayResult result = start_replay_result("engine", config.policy, trace, config.model,
                                            config.layout, config.pool_pages);

  CacheSide side;
  EngineResult& engine = result.engine;
  engine.schedule = config.schedule;
  engine.max_running = config.scheduler.max_running;
  engine.chunk_tokens = config.scheduler.chunk_tokens;
  engine.cost = config.cost;
  const std::vector<uint32_t> order = arrival_order(trace, engine.out_of_order);
  const bool host = config.host.enabled() && !config.no_cache;
  engine.run =
      EngineRunner(trace, config, order, !config.no_cache, host ? &config.host : nullptr, true)
          .run(side);
  // A baseline's leaks and accounting errors count as the primary run's.
  const auto baseline = [&](bool use_cache, const char* what) {
    CacheSide baseline_side;
    EngineRun run = EngineRunner(trace, config, order, use_cache).run(baseline_side);
    side.pages_leaked += baseline_side.pages_leaked;
    if (side.accounting_error.empty() && !baseline_side.accounting_error.empty()) {
      side.accounting_error = fmt::format("run {}: {}", what, baseline_side.accounting_error);
    }
    return run;
  };
  if (host && config.compare_no_cache) engine.device_only = baseline(true, "without the host tier");
  if (!config.no_cache && config.compare_no_cache)
    engine.no_cache = baseline(false, "with caching off");

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
  result.mrc = side.mrc;
  if (host) {
    result.host = side.host;
    result.host.capacity_pages = config.host.capacity_pages;
    result.host.policy = config.host.policy;
    result.host.write_policy = WritePolicy::parse(config.host.write_policy).to_string();
    const CacheBudget budget({config.host.capacity_pages * config.layout.bytes_per_page(),
                              config.host.high_watermark, config.host.low_watermark},
                             config.layout.bytes_per_page());
    result.host.high_watermark_pages = budget.high_pages();
    result.host.low_watermark_pages = budget.low_pages();
    engine.h2d_gbps = config.host.h2d_gbps;
    engine.d2h_gbps = config.host.d2h_gbps;
  }
  // The tiers below come back as one run: the disk's part, then the remote's.
  uint64_t disk_tokens = 0;
  if (config.disk != nullptr && !config.no_cache) {
    disk_tokens = config.disk->stats().loaded_pages * config.layout.page_tokens;
    result.disk = disk_replay_result(*config.disk, disk_tokens);
    result.disk.read_gbps = config.disk_read_gbps;
    result.disk.write_gbps = config.disk_write_gbps;
  }
  if (config.remote != nullptr && !config.no_cache) {
    result.remote = remote_replay_result(*config.remote, side.remote_hit_tokens - disk_tokens);
  }
  result.wall_seconds = side.wall_seconds;
  result.cache_seconds = side.admit.total_seconds() + side.finish.total_seconds();
  result.admit = side.admit.summary();
  result.finish = side.finish.summary();
  return result;
}

}  // namespace radixkv::tools
