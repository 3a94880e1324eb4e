#include "tools/replay/engine_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <utility>
#include <vector>

#include "tools/replay/replay_report.h"

namespace radixkv::tools {

namespace {

double ratio(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

using Json = nlohmann::ordered_json;

}  // namespace

nlohmann::ordered_json cost_model_json(const CostModel& cost) {
  return {{"prefill_s_per_token", cost.prefill_s_per_token},
          {"decode_s_per_step", cost.decode_s_per_step},
          {"decode_s_per_seq", cost.decode_s_per_seq}};
}

void add_run_json(nlohmann::ordered_json& out, const EngineRun& run) {
  out["cache_enabled"] = run.cache;
  out["steps"] = run.steps;
  out["preemptions"] = run.preemptions;
  out["readmitted"] = run.readmitted;
  out["rejected"] = run.rejected;
  out["held"] = run.held;
  out["prefill_tokens"] = run.prefill_tokens;
  out["output_tokens"] = run.output_tokens;
  out["peak_running"] = run.peak_running;
  out["peak_waiting"] = run.peak_waiting;
  out["simulated_seconds"] = run.simulated_seconds;
  out["ttft_p50_seconds"] = run.ttft_p50_s;
  out["ttft_p90_seconds"] = run.ttft_p90_s;
  out["ttft_p99_seconds"] = run.ttft_p99_s;
  out["ttft_mean_seconds"] = run.ttft_mean_s;
  out["ttft_max_seconds"] = run.ttft_max_s;
  out["output_tokens_per_second"] = run.output_tokens_per_second();
  out["requests_per_simulated_second"] = run.requests_per_second();
}

std::string format_engine_text(const EngineResult& e, uint64_t input_tokens) {
  std::string out;
  out += fmt::format("  {:<18} {}, at most {} running, {} prefill tokens per step\n", "schedule",
                     e.schedule, e.max_running, e.chunk_tokens);
  out += fmt::format("  {:<18} step = {} s + {} s per prefill token + {} s per decoding sequence\n",
                     "cost model", e.cost.decode_s_per_step, e.cost.prefill_s_per_token,
                     e.cost.decode_s_per_seq);
  if (e.out_of_order > 0) {
    out += fmt::format(
        "  {:<18} {} requests arrive before one written above them; served in "
        "arrival order\n",
        "arrival order", group_digits(e.out_of_order));
  }
  // Columns: the run, then its baselines. A host tier adds the device-only run between them.
  std::vector<std::pair<std::string_view, const EngineRun*>> columns;
  const EngineRun* cached = e.run.cache ? &e.run : nullptr;
  const EngineRun* plain = e.run.cache ? (e.no_cache ? &*e.no_cache : nullptr) : &e.run;
  if (e.device_only) {
    columns = {{"with host tier", cached}, {"device only", &*e.device_only}, {"no cache", plain}};
    out += fmt::format(
        "  {:<18} host to device {} GB/s, device to host {} GB/s, overlapping compute\n",
        "copy engines", e.h2d_gbps, e.d2h_gbps);
  } else {
    columns = {{"with cache", cached}, {"no cache", plain}};
  }
  out += fmt::format("  {:<26}", "simulated engine");
  for (const auto& [title, run] : columns) out += fmt::format(" {:>16}", title);
  out += "\n";
  const auto row = [&](std::string_view label, auto value) {
    out += fmt::format("  {:<26}", label);
    for (const auto& [title, run] : columns) {
      out += fmt::format(" {:>16}", run ? value(*run) : std::string("-"));
    }
    out += "\n";
  };
  const auto seconds = [](double s) { return fmt::format("{:.3f} s", s); };
  row("hit rate", [&](const EngineRun& r) {
    return fmt::format("{:.2f} %", 100 * ratio(r.hit_tokens, input_tokens));
  });
  row("TTFT p50", [&](const EngineRun& r) { return seconds(r.ttft_p50_s); });
  row("TTFT p90", [&](const EngineRun& r) { return seconds(r.ttft_p90_s); });
  row("TTFT p99", [&](const EngineRun& r) { return seconds(r.ttft_p99_s); });
  row("TTFT mean", [&](const EngineRun& r) { return seconds(r.ttft_mean_s); });
  row("throughput (output tok/s)",
      [](const EngineRun& r) { return fmt::format("{:.1f}", r.output_tokens_per_second()); });
  row("requests / s",
      [](const EngineRun& r) { return fmt::format("{:.2f}", r.requests_per_second()); });
  row("simulated time", [&](const EngineRun& r) { return seconds(r.simulated_seconds); });
  row("prefill tokens computed", [](const EngineRun& r) { return group_digits(r.prefill_tokens); });
  row("output tokens", [](const EngineRun& r) { return group_digits(r.output_tokens); });
  row("steps", [](const EngineRun& r) { return group_digits(r.steps); });
  row("preemptions", [](const EngineRun& r) { return group_digits(r.preemptions); });
  row("held (sharing)", [](const EngineRun& r) { return group_digits(r.held); });
  row("peak running / waiting",
      [](const EngineRun& r) { return fmt::format("{} / {}", r.peak_running, r.peak_waiting); });
  row("rejected", [](const EngineRun& r) { return group_digits(r.rejected); });
  return out;
}

void add_engine_json(Json& out, const EngineResult& e, uint64_t input_tokens) {
  out["schedule"] = e.schedule;
  out["max_running"] = e.max_running;
  out["chunk_tokens"] = e.chunk_tokens;
  out["out_of_order_requests"] = e.out_of_order;
  out["cost_model"] = cost_model_json(e.cost);
  add_run_json(out, e.run);
  if (e.device_only) {
    out["copy_engines"] = {{"h2d_gbps", e.h2d_gbps}, {"d2h_gbps", e.d2h_gbps}};
    Json device_only = {{"hit_rate", ratio(e.device_only->hit_tokens, input_tokens)}};
    add_run_json(device_only, *e.device_only);
    out["device_only"] = std::move(device_only);
  }
  if (e.no_cache) {
    Json baseline = {{"hit_rate", ratio(e.no_cache->hit_tokens, input_tokens)}};
    add_run_json(baseline, *e.no_cache);
    out["no_cache"] = std::move(baseline);
  } else {
    out["no_cache"] = nullptr;
  }
}

}  // namespace radixkv::tools
