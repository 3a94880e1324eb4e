#include "tools/replay/engine_parts.h"

#include <fmt/format.h>

#include <algorithm>

#include "tools/replay/percentile.h"

namespace radixkv::tools {

namespace {

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

}  // namespace

void check_engine_config(const Trace& trace, const EngineReplayConfig& config) {
  if (config.pool_pages == 0 || config.pool_pages >= kInvalidPage) {
    throw std::invalid_argument(fmt::format("the KV pool must be between 1 and {} pages, got {}",
                                            kInvalidPage - 1, config.pool_pages));
  }
  if (config.window == 0) throw std::invalid_argument("engine replay: window must be at least 1");
  SchedulerConfig::from_schedule(config.schedule);  // a bad name throws before anything runs
  config.scheduler.validate();
  make_policy(config.policy);
  config.host.validate();
  check_fits(trace, config);
}

SchedulerConfig scheduler_config(const EngineReplayConfig& config, bool use_cache) {
  SchedulerConfig sched = config.scheduler;
  const SchedulerConfig policy = SchedulerConfig::from_schedule(config.schedule);
  sched.policy = policy.policy;
  sched.share_prefixes = policy.share_prefixes;
  sched.use_cache = use_cache;
  sched.time_calls = true;
  return sched;
}

SchedRequest sched_request(const Trace& trace, TokenExpander& expander, uint32_t index) {
  const TraceRequest& r = trace.requests[index];
  SchedRequest request;
  request.id = index;
  request.name_space = r.ns;
  request.priority = r.priority;
  const std::span<const TokenId> prompt = expander.expand(index);
  request.prompt.assign(prompt.begin(), prompt.end());
  append_content(answer_key(r), 0, r.output_tokens, request.answer);
  return request;
}

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
}  // namespace radixkv::tools
