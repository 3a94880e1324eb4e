#include "tools/replay/cluster_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tools/replay/engine_report.h"
#include "tools/replay/replay_report.h"

namespace radixkv::tools {

namespace {

// The sums under the names of the router's metrics (docs/metrics.md, "Predicted against
// delivered"), without their radixkv_router_ prefix and _total suffix.
nlohmann::ordered_json overlap_json(const router::OverlapGap& g) {
  return {{"observations", g.observations},
          {"predicted_tokens", g.predicted_tokens},
          {"delivered_tokens", g.delivered_tokens},
          {"overpredicted_tokens", g.overpredicted_tokens},
          {"underpredicted_tokens", g.underpredicted_tokens},
          {"mispredicted", g.mismatched},
          {"gap_tokens", g.gap_tokens()}};
}

double share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

std::string format_cluster_text(const ClusterResult& c) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<18} {}\n", label, value);
  };
  line("cluster",
       fmt::format(
           "{} workers, routing {}{}, each scheduling {}", c.workers, c.route,
           c.route == "prefix-load" ? fmt::format(" (overlap weight {})", c.overlap_weight) : "",
           c.schedule));
  if (c.event_delay_s > 0) {
    line("event delay",
         fmt::format("{} s from a step's end to the router applying its events", c.event_delay_s));
  }
  line("routed to a hit", fmt::format("{} requests (a worker holding >= 1 of their blocks)",
                                      group_digits(c.routed_to_overlap)));
  line("predicted hits",
       fmt::format("{} tokens predicted, {} delivered: {} over-, {} under-predicted, gap {:.2f} % "
                   "of delivered",
                   group_digits(c.overlap.predicted_tokens),
                   group_digits(c.overlap.delivered_tokens),
                   group_digits(c.overlap.overpredicted_tokens),
                   group_digits(c.overlap.underpredicted_tokens),
                   100.0 * share(c.overlap.gap_tokens(), c.overlap.delivered_tokens)));
  line("TTFT",
       fmt::format("p50 {:.3f} s, p90 {:.3f} s, p99 {:.3f} s, max {:.3f} s", c.total.ttft_p50_s,
                   c.total.ttft_p90_s, c.total.ttft_p99_s, c.total.ttft_max_s));
  line("simulated time", fmt::format("{:.1f} s, {} preemptions", c.total.simulated_seconds,
                                     group_digits(c.total.preemptions)));
  line("load imbalance",
       fmt::format("{:.3f} (max / mean of the workers' busy seconds)", c.load_imbalance));
  out += fmt::format("  {:<8} {:>10} {:>9} {:>16} {:>13} {:>12} {:>14}\n", "worker", "requests",
                     "hit rate", "peak load blks", "busy s", "evictions", "gap tokens");
  for (size_t w = 0; w < c.per_worker.size(); ++w) {
    const ClusterWorkerResult& r = c.per_worker[w];
    out += fmt::format("  {:<8} {:>10} {:>8.2f}% {:>16.1f} {:>13.2f} {:>12} {:>14}\n", w,
                       group_digits(r.requests), 100.0 * r.hit_rate(), r.peak_load_blocks,
                       r.busy_seconds, group_digits(r.evicted_pages),
                       group_digits(r.overlap.gap_tokens()));
  }
  return out;
}

void add_cluster_json(nlohmann::ordered_json& out, const ClusterResult& c) {
  out["workers"] = c.workers;
  out["route"] = c.route;
  out["overlap_weight"] = c.overlap_weight;
  out["event_delay_seconds"] = c.event_delay_s;
  out["schedule"] = c.schedule;
  out["cost_model"] = cost_model_json(c.cost);
  out["routed_to_overlap"] = c.routed_to_overlap;
  out["event_batches"] = c.event_batches;
  out["load_imbalance"] = c.load_imbalance;
  out["overlap"] = overlap_json(c.overlap);
  add_run_json(out, c.total);
  nlohmann::ordered_json workers = nlohmann::ordered_json::array();
  for (const ClusterWorkerResult& r : c.per_worker) {
    workers.push_back({{"requests", r.requests},
                       {"prompt_tokens", r.prompt_tokens},
                       {"hit_tokens", r.hit_tokens},
                       {"hit_rate", r.hit_rate()},
                       {"peak_load_blocks", r.peak_load_blocks},
                       {"busy_seconds", r.busy_seconds},
                       {"preemptions", r.preemptions},
                       {"evictions", r.evicted_pages},
                       {"overlap", overlap_json(r.overlap)}});
  }
  out["per_worker"] = std::move(workers);
}

}  // namespace radixkv::tools
