#include "tools/replay/replay_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "tools/replay/cluster_report.h"
#include "tools/replay/engine_report.h"
#include "tools/replay/host_tier_report.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

using Json = nlohmann::ordered_json;  // keys in the order written

Json latency_json(const LatencySummary& s) {
  return {{"count", s.count}, {"p50", s.p50_us}, {"p90", s.p90_us},
          {"p99", s.p99_us},  {"max", s.max_us}, {"mean", s.mean_us}};
}

// Strings are escaped by the library; bytes that are not UTF-8 (a trace path on a system that
// allows any bytes in names) become U+FFFD instead of making the output invalid JSON.
std::string dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string latency_text(const LatencySummary& s) {
  return fmt::format("p50 {:.1f} us, p90 {:.1f} us, p99 {:.1f} us, max {:.1f} us", s.p50_us,
                     s.p90_us, s.p99_us, s.max_us);
}

double percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

std::string group_digits(uint64_t value) {
  std::string digits = fmt::format("{}", value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_report_text(const ReplayResult& r) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<18} {}\n", label, value);
  };
  out += fmt::format("radixkv replay: {} mode, policy {}\n", r.mode, r.policy);
  line("trace", r.skipped_records == 0
                    ? r.trace
                    : fmt::format("{} ({} malformed records skipped)", r.trace, r.skipped_records));
  line("cache",
       fmt::format("{} tokens = {} pages of {} tokens = {} ({}, {} per token)",
                   group_digits(r.capacity_tokens()), group_digits(r.capacity_pages), r.page_tokens,
                   format_bytes(r.capacity_bytes()), r.model, format_bytes(r.bytes_per_token())));
  line("watermarks",
       fmt::format("high {} pages = {}, low {} pages = {}{}", group_digits(r.high_watermark_pages),
                   format_bytes(r.pages_bytes(r.high_watermark_pages, "high watermark")),
                   group_digits(r.low_watermark_pages),
                   format_bytes(r.pages_bytes(r.low_watermark_pages, "low watermark")),
                   r.mode == "cache" && r.high_watermark_pages >= r.capacity_pages
                       ? " (eviction on demand only)"
                       : ""));
  line("requests", group_digits(r.requests));
  line("input tokens", group_digits(r.input_tokens));
  line("hit rate", fmt::format("{:.2f} % of input tokens", 100.0 * r.hit_rate()));
  line("tokens reused", fmt::format("{} ({} of KV not recomputed)", group_digits(r.hit_tokens),
                                    format_bytes(r.hit_bytes())));
  if (r.mrc) {
    std::string points;
    for (std::size_t i = 0; i < r.mrc->points.size(); ++i) {
      points += fmt::format("{}{}x {:.2f} %", i == 0 ? "" : ", ", r.mrc->points[i].multiple,
                            100.0 * r.mrc->hit_rate(i));
    }
    line("live curve", fmt::format("LRU hit rate at {} the cache (sampled at {:.3g})", points,
                                   r.mrc->sampling_rate));
  }
  if (r.partial_hit_tokens) {
    line("partial hits",
         fmt::format("{} tokens ({:.2f} % of input tokens) copied from part of "
                     "a cached page",
                     group_digits(*r.partial_hit_tokens),
                     100.0 * static_cast<double>(*r.partial_hit_tokens) /
                         static_cast<double>(std::max<uint64_t>(r.input_tokens, 1))));
  }
  for (const NamespaceResult& n : r.namespaces) {
    line(n.name_space ? fmt::format("namespace {}", *n.name_space) : "other namespaces",
         fmt::format(
             "{:.2f} % hit rate over {} requests, {} pages cached at the end{}{}",
             100.0 * n.hit_rate(), group_digits(n.requests), group_digits(n.final_cached_pages),
             n.name_space ? fmt::format(" (quota: min {} max {} pages", n.min_pages, n.max_pages)
                          : std::string(),
             !n.name_space ? std::string()
             : n.lowest_after_min
                 ? fmt::format("; fewest after reaching min: {})", *n.lowest_after_min)
                 : std::string("; never reached min)")));
  }
  out += format_host_tier_text(r);
  if (!r.remote.store.empty()) {
    line("remote tier",
         fmt::format("{} (write-{}): {} tokens hit ({} pages loaded), {} pages stored, {} writes "
                     "dropped, {} errors, {} calls skipped in reconnect backoff, {} bad values",
                     r.remote.store, r.remote.write, group_digits(r.remote.hit_tokens),
                     group_digits(r.remote.loaded_pages), group_digits(r.remote.stored_pages),
                     group_digits(r.remote.dropped_writes), group_digits(r.remote.errors),
                     group_digits(r.remote.unavailable), group_digits(r.remote.bad_values)));
    if (!r.remote.first_error.empty()) {
      line("remote error", fmt::format("{}{}", r.remote.first_error,
                                       r.remote.never_answered
                                           ? " (the first; no call succeeded: no remote tier ran)"
                                           : " (the first)"));
    }
    if (r.remote.prefetch != "off") {
      line("remote prefetch",
           fmt::format("{}: {} pages taken from prefetches, {} prefetches dropped",
                       r.remote.prefetch, group_digits(r.remote.prefetched_pages),
                       group_digits(r.remote.prefetch_dropped)));
    }
  }
  if (!r.disk.path.empty()) {
    line("disk tier",
         fmt::format("{}, {} ({} pages), {}, {}: {} tokens hit ({} pages loaded), {} pages "
                     "written, {} evicted, {} unreachable reclaimed, {} bad",
                     r.disk.path, format_bytes(r.disk.capacity_bytes), group_digits(r.disk.slots),
                     r.disk.policy, r.disk.write_policy, group_digits(r.disk.hit_tokens),
                     group_digits(r.disk.loaded_pages), group_digits(r.disk.written_pages),
                     group_digits(r.disk.evictions), group_digits(r.disk.unreachable_pages),
                     group_digits(r.disk.bad_pages)));
    line("disk restart",
         fmt::format("{} pages recovered in {:.3f} s", group_digits(r.disk.recovered_pages),
                     r.disk.recovery_seconds));
  }
  line("pages inserted", group_digits(r.inserted_pages));
  if (r.uncached_pages > 0) {
    line("pages not cached",
         fmt::format("{} (nothing was evictable)", group_digits(r.uncached_pages)));
  }
  line("evictions", fmt::format("{} pages ({} leaves emptied)", group_digits(r.evicted_pages),
                                group_digits(r.evicted_nodes)));
  line("peak cached",
       fmt::format("{} pages = {} ({:.1f} % of capacity)", group_digits(r.peak_cached_pages),
                   format_bytes(r.peak_cached_bytes()),
                   percent(r.peak_cached_pages, r.capacity_pages)));
  line("pages leaked",
       r.accounting_error.empty()
           ? fmt::format("{}", r.pages_leaked)
           : fmt::format("{} (ACCOUNTING ERROR: {})", r.pages_leaked, r.accounting_error));
  line("wall time",
       fmt::format("{:.3f} s, {} requests/s ({:.3f} s inside cache calls)", r.wall_seconds,
                   group_digits(static_cast<uint64_t>(r.requests_per_second())), r.cache_seconds));
  line("admit latency", latency_text(r.admit));
  line("finish latency", latency_text(r.finish));
  if (r.kv_events_published) {
    line("kv events", fmt::format("{} batches published", group_digits(*r.kv_events_published)));
  }
  if (r.mode == "engine") out += format_engine_text(r.engine, r.input_tokens);
  if (r.mode == "cluster") out += format_cluster_text(r.cluster);
  return out;
}

namespace {

Json report_json(const ReplayResult& r) {
  Json out = {
      {"mode", r.mode},
      {"policy", r.policy},
      {"trace", r.trace},
      {"model", r.model},
      {"page_tokens", r.page_tokens},
      {"capacity_pages", r.capacity_pages},
      {"capacity_tokens", r.capacity_tokens()},
      {"capacity_bytes", r.capacity_bytes()},
      {"high_watermark_pages", r.high_watermark_pages},
      {"high_watermark_bytes", r.pages_bytes(r.high_watermark_pages, "high watermark")},
      {"low_watermark_pages", r.low_watermark_pages},
      {"low_watermark_bytes", r.pages_bytes(r.low_watermark_pages, "low watermark")},
      {"requests", r.requests},
      {"input_tokens", r.input_tokens},
      {"hit_tokens", r.hit_tokens},
      {"hit_rate", r.hit_rate()},
      {"hit_bytes", r.hit_bytes()},
      {"inserted_pages", r.inserted_pages},
      {"uncached_pages", r.uncached_pages},
      {"evictions", r.evicted_pages},
      {"evicted_nodes", r.evicted_nodes},
      {"peak_cached_pages", r.peak_cached_pages},
      {"peak_cached_bytes", r.peak_cached_bytes()},
      {"final_cached_pages", r.final_cached_pages},
      {"pages_leaked", r.pages_leaked},
      {"accounting_ok", r.accounting_error.empty()},
      {"accounting_error", r.accounting_error},
      {"skipped_records", r.skipped_records},
      {"wall_seconds", r.wall_seconds},
      {"cache_seconds", r.cache_seconds},
      {"requests_per_second", r.requests_per_second()},
      {"admit_us", latency_json(r.admit)},
      {"finish_us", latency_json(r.finish)},
  };
  if (r.partial_hit_tokens) out["partial_hit_tokens"] = *r.partial_hit_tokens;
  if (!r.namespaces.empty()) {
    Json list = Json::array();
    for (const NamespaceResult& n : r.namespaces) {
      list.push_back(
          {{"namespace", n.name_space ? Json(*n.name_space) : Json()},
           {"min_pages", n.min_pages},
           {"max_pages", n.max_pages},
           {"requests", n.requests},
           {"input_tokens", n.input_tokens},
           {"hit_tokens", n.hit_tokens},
           {"hit_rate", n.hit_rate()},
           {"final_cached_pages", n.final_cached_pages},
           {"lowest_after_min", n.lowest_after_min ? Json(*n.lowest_after_min) : Json()}});
    }
    out["namespaces"] = std::move(list);
  }
  add_host_tier_json(out, r);
  if (!r.remote.store.empty()) {
    out["remote"] = r.remote.store;
    out["remote_write"] = r.remote.write;
    out["remote_hit_tokens"] = r.remote.hit_tokens;
    out["remote_loaded_pages"] = r.remote.loaded_pages;
    out["remote_stored_pages"] = r.remote.stored_pages;
    out["remote_dropped_writes"] = r.remote.dropped_writes;
    out["remote_errors"] = r.remote.errors;
    out["remote_unavailable"] = r.remote.unavailable;
    out["remote_first_error"] =
        r.remote.first_error.empty() ? Json(nullptr) : Json(r.remote.first_error);
    out["remote_never_answered"] = r.remote.never_answered;
    out["remote_bad_values"] = r.remote.bad_values;
    out["remote_prefetch"] = r.remote.prefetch;
    out["remote_prefetched_pages"] = r.remote.prefetched_pages;
    out["remote_prefetch_dropped"] = r.remote.prefetch_dropped;
  }
  if (!r.disk.path.empty()) {
    out["disk"] = r.disk.path;
    out["disk_capacity_bytes"] = r.disk.capacity_bytes;
    out["disk_slots"] = r.disk.slots;
    out["disk_policy"] = r.disk.policy;
    out["disk_write_policy"] = r.disk.write_policy;
    out["disk_hit_tokens"] = r.disk.hit_tokens;
    out["disk_loaded_pages"] = r.disk.loaded_pages;
    out["disk_written_pages"] = r.disk.written_pages;
    out["disk_evictions"] = r.disk.evictions;
    out["disk_unreachable_pages"] = r.disk.unreachable_pages;
    out["disk_bad_pages"] = r.disk.bad_pages;
    out["disk_recovered_pages"] = r.disk.recovered_pages;
    out["disk_recovery_seconds"] = r.disk.recovery_seconds;
    if (r.mode == "engine") {
      out["disk_read_gbps"] = r.disk.read_gbps;
      out["disk_write_gbps"] = r.disk.write_gbps;
    }
  }
  if (r.kv_events_published) out["kv_events_published"] = *r.kv_events_published;
  if (r.mrc) {
    Json points = Json::array();
    for (std::size_t i = 0; i < r.mrc->points.size(); ++i) {
      points.push_back({{"multiple", r.mrc->points[i].multiple},
                        {"capacity_tokens", r.mrc->points[i].capacity_tokens},
                        {"hit_rate", r.mrc->hit_rate(i)}});
    }
    out["mrc"] = std::move(points);
    out["mrc_sampling_rate"] = r.mrc->sampling_rate;
  }
  if (r.mode == "engine") add_engine_json(out, r.engine, r.input_tokens);
  if (r.mode == "cluster") add_cluster_json(out, r.cluster);
  return out;
}

}  // namespace

std::string format_report_json(const ReplayResult& r) { return dump(report_json(r)); }

std::string format_sweep_text(const std::vector<ReplayResult>& results) {
  // A host capacity column only when a run has a host tier: a one-tier table stays as it was.
  const bool tiers = std::any_of(results.begin(), results.end(),
                                 [](const ReplayResult& r) { return r.host.enabled; });
  const auto host_column = [&](const std::string& text) {
    return tiers ? fmt::format(" {:>16}", text) : std::string();
  };
  std::string out = fmt::format("{:<10} {:>16}{} {:>12} {:>10} {:>14} {:>9} {:>7}\n", "policy",
                                "capacity tokens", host_column("host tokens"), "cache bytes",
                                "hit rate", "evicted pages", "wall s", "leaked");
  for (const ReplayResult& r : results) {
    out += fmt::format("{:<10} {:>16}{} {:>12} {:>9.2f}% {:>14} {:>9.3f} {:>7}\n", r.policy,
                       group_digits(r.capacity_tokens()),
                       host_column(r.host.enabled ? host_capacity_text(r) : "0"),
                       format_bytes(r.capacity_bytes()), 100.0 * r.hit_rate(),
                       group_digits(r.evicted_pages), r.wall_seconds, r.pages_leaked);
  }
  return out;
}

std::string format_sweep_json(const std::vector<ReplayResult>& results) {
  Json runs = Json::array();
  bool ok = true;
  for (const ReplayResult& r : results) {
    runs.push_back(report_json(r));
    ok = ok && r.ok();
  }
  return dump(Json{{"sweep", true}, {"ok", ok}, {"runs", std::move(runs)}});
}

}  // namespace radixkv::tools
