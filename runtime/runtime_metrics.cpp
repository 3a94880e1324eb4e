// RuntimeMetrics: merging snapshots, PrefixCacheRuntime's snapshot, and the exposition. The names
// and their meaning are listed in docs/metrics.md; a test reads them back with Python's parser.
#include "runtime/runtime_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "metrics/prometheus.h"
#include "runtime/prefix_cache_runtime.h"

namespace radixkv {

using metrics::Label;
using metrics::MetricType;
using metrics::PrometheusWriter;

void RuntimeMetrics::merge(const RuntimeMetrics& o) {
  page_tokens = o.page_tokens;
  for (auto [to, from] : std::array<std::pair<uint64_t*, uint64_t>, 18>{{
           {&admits, o.admits},
           {&admit_no_space, o.admit_no_space},
           {&admit_too_large, o.admit_too_large},
           {&finishes, o.finishes},
           {&aborts, o.aborts},
           {&prompt_tokens, o.prompt_tokens},
           {&device_hit_tokens, o.device_hit_tokens},
           {&host_hit_tokens, o.host_hit_tokens},
           {&remote_hit_tokens, o.remote_hit_tokens},
           {&prefill_tokens, o.prefill_tokens},
           {&decode_tokens, o.decode_tokens},
           {&inserted_pages, o.inserted_pages},
           {&duplicate_pages, o.duplicate_pages},
           {&evicted_pages, o.evicted_pages},
           {&host_evicted_pages, o.host_evicted_pages},
           {&host_loaded_pages, o.host_loaded_pages},
           {&host_written_pages, o.host_written_pages},
           {&remote_loaded_pages, o.remote_loaded_pages},
       }}) {
    *to += from;
  }
  live_sequences += o.live_sequences;
  const auto add_tier = [](TierGauges& to, const TierGauges& from) {
    to.capacity_pages += from.capacity_pages;
    to.budget_pages += from.budget_pages;
    to.cached_pages += from.cached_pages;
    to.bytes_per_page = from.bytes_per_page;
  };
  add_tier(device, o.device);
  if (o.host) add_tier(host ? *host : host.emplace(), *o.host);
  admit_latency.merge(o.admit_latency);
  commit_latency.merge(o.commit_latency);
  finish_latency.merge(o.finish_latency);
  if (o.curve) {
    if (!curve) {
      curve = o.curve;
    } else {
      curve->prompt_tokens += o.curve->prompt_tokens;
      curve->sampling_rate = std::min(curve->sampling_rate, o.curve->sampling_rate);
      curve->memory_bytes += o.curve->memory_bytes;
      for (std::size_t i = 0; i < curve->points.size(); ++i) {
        curve->points[i].capacity_tokens += o.curve->points[i].capacity_tokens;
        curve->points[i].hit_tokens += o.curve->points[i].hit_tokens;
      }
    }
  }
}

RuntimeMetrics PrefixCacheRuntime::metrics() const {
  RuntimeMetrics m;
  m.page_tokens = page_tokens_;
  const RuntimeStats& s = stats_;
  const TreeStats& t = tree_.stats();
  m.admits = s.admits;
  m.admit_no_space = s.admit_no_space;
  m.admit_too_large = s.admit_too_large;
  m.finishes = s.finishes;
  m.aborts = s.aborts;
  m.prompt_tokens = s.prompt_tokens;
  m.device_hit_tokens = s.device_hit_tokens;
  m.host_hit_tokens = s.host_hit_tokens;
  m.remote_hit_tokens = s.remote_hit_tokens;
  m.prefill_tokens = s.prefill_tokens;
  m.decode_tokens = s.decode_tokens;
  m.inserted_pages = s.committed_pages;
  m.duplicate_pages = s.duplicate_pages;
  m.evicted_pages = s.evicted_pages;
  m.host_evicted_pages = t.host_evicted_pages;
  m.host_loaded_pages = t.loaded_pages;
  m.host_written_pages = t.written_pages;
  m.remote_loaded_pages = s.remote_hit_tokens / page_tokens_;
  m.live_sequences = live_;
  m.device = {pool_.capacity_pages(), budget().limit_pages(), tree_.cached_pages(),
              pool_.bytes_per_page()};
  if (host_budget_) {
    const PagePool& host = *tree_.host_pool();
    m.host = TierGauges{host.capacity_pages(), host_budget_->limit_pages(),
                        tree_.host_cached_pages(), host.bytes_per_page()};
  }
  m.admit_latency = latencies_.admit;
  m.commit_latency = latencies_.commit;
  m.finish_latency = latencies_.finish;
  if (curve_) {
    MissRatioCurve& c = m.curve.emplace();
    c.prompt_tokens = curve_->prompt_tokens();
    c.sampling_rate = curve_->sampler().rate();
    c.memory_bytes = curve_->memory_bytes();
    for (const metrics::MrcPoint& p : curve_->curve()) {
      c.points.push_back(
          {p.multiple, p.capacity_tokens, p.hit_rate * static_cast<double>(c.prompt_tokens)});
    }
  }
  return m;
}

void PrefixCacheRuntime::write_metrics(std::ostream& out) const {
  radixkv::write_metrics(out, metrics());
}

namespace {

void counter(PrometheusWriter& w, const char* name, const char* help, uint64_t value) {
  w.family(name, MetricType::kCounter, help);
  w.sample(value);
}

void gauge(PrometheusWriter& w, const char* name, const char* help, uint64_t value) {
  w.family(name, MetricType::kGauge, help);
  w.sample(value);
}

// A family with one sample per tier that has the value.
struct TierValue {
  const char* tier;
  uint64_t value;
};
void per_tier(PrometheusWriter& w, const char* name, const char* help,
              const std::vector<TierValue>& values) {
  w.family(name, MetricType::kCounter, help);
  for (const TierValue& v : values) {
    const std::array<Label, 1> labels{{{"tier", v.tier}}};
    w.sample(labels, v.value);
  }
}

void histogram(PrometheusWriter& w, const char* name, const char* help,
               const metrics::LatencyHistogram& h) {
  w.family(name, MetricType::kHistogram, help);
  w.histogram({}, metrics::LatencyHistogram::upper_bounds_seconds(), h.counts(), h.sum_seconds());
}

void write_curve(PrometheusWriter& w, const MissRatioCurve& c) {
  std::vector<std::string> multiples;
  for (const CurvePoint& p : c.points) multiples.push_back(metrics::format_value(p.multiple));
  w.family("radixkv_mrc_hit_ratio", MetricType::kGauge,
           "Live miss-ratio curve: estimated LRU hit ratio of prompt tokens at a multiple of the "
           "cache's capacity (SHARDS sampling).");
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    const std::array<Label, 1> labels{{{"multiple", multiples[i]}}};
    w.sample(labels, c.hit_rate(i));
  }
  w.family("radixkv_mrc_capacity_tokens", MetricType::kGauge,
           "The cache size each point of the live curve is for, in tokens.");
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    const std::array<Label, 1> labels{{{"multiple", multiples[i]}}};
    w.sample(labels, c.points[i].capacity_tokens);
  }
  counter(w, "radixkv_mrc_prompt_tokens_total", "Prompt tokens the live curve was fed.",
          c.prompt_tokens);
  w.family("radixkv_mrc_sampling_ratio", MetricType::kGauge,
           "The live curve's spatial sampling rate of page keys.");
  w.sample(c.sampling_rate);
  gauge(w, "radixkv_mrc_memory_bytes", "Memory the live curve holds.", c.memory_bytes);
}

}  // namespace

void write_metrics(std::ostream& out, const RuntimeMetrics& m) {
  PrometheusWriter w(out);
  counter(w, "radixkv_requests_total", "Requests admitted.", m.admits);
  w.family("radixkv_admit_refusals_total", MetricType::kCounter,
           "Admits refused: no_space (retry later) or too_large (never fits).");
  for (const auto& [reason, value] :
       {std::pair{"no_space", m.admit_no_space}, std::pair{"too_large", m.admit_too_large}}) {
    const std::array<Label, 1> labels{{{"reason", reason}}};
    w.sample(labels, value);
  }
  counter(w, "radixkv_requests_finished_total", "Sequences finished (their pages cached).",
          m.finishes);
  counter(w, "radixkv_requests_aborted_total", "Sequences aborted.", m.aborts);
  counter(w, "radixkv_prompt_tokens_total", "Prompt tokens of admitted requests.", m.prompt_tokens);
  per_tier(w, "radixkv_hit_tokens_total",
           "Prompt tokens served from the cache, by the tier that held them at admit.",
           {{"device", m.device_hit_tokens},
            {"host", m.host_hit_tokens},
            {"remote", m.remote_hit_tokens}});
  counter(w, "radixkv_prefill_tokens_total", "Prompt tokens left to compute at admit.",
          m.prefill_tokens);
  counter(w, "radixkv_decode_tokens_total", "Tokens appended by decoding.", m.decode_tokens);
  per_tier(w, "radixkv_pages_inserted_total", "Computed pages the cache took.",
           {{"device", m.inserted_pages}});
  counter(w, "radixkv_pages_duplicate_total", "Computed pages the cache already held (released).",
          m.duplicate_pages);
  std::vector<TierValue> evicted = {{"device", m.evicted_pages}};
  if (m.host) evicted.push_back({"host", m.host_evicted_pages});
  per_tier(w, "radixkv_pages_evicted_total",
           "Cached pages evicted from a tier (from the device to the host tier under write-back).",
           evicted);
  per_tier(w, "radixkv_pages_loaded_total", "Pages copied to the device from a lower tier.",
           {{"host", m.host_loaded_pages}, {"remote", m.remote_loaded_pages}});
  per_tier(w, "radixkv_pages_written_total", "Pages copied from the device to the host tier.",
           {{"host", m.host_written_pages}});
  gauge(w, "radixkv_live_sequences", "Sequences admitted and not yet finished or aborted.",
        m.live_sequences);
  std::vector<std::pair<const char*, const TierGauges*>> tiers = {{"device", &m.device}};
  if (m.host) tiers.emplace_back("host", &*m.host);
  const auto tier_gauge = [&](const char* name, const char* help, auto field) {
    w.family(name, MetricType::kGauge, help);
    for (const auto& [tier, g] : tiers) {
      const std::array<Label, 1> labels{{{"tier", tier}}};
      w.sample(labels, field(*g) * g->bytes_per_page);
    }
  };
  tier_gauge("radixkv_cached_bytes", "KV bytes the cache holds on a tier.",
             [](const TierGauges& g) { return g.cached_pages; });
  tier_gauge("radixkv_cache_budget_bytes", "The cache's budget on a tier.",
             [](const TierGauges& g) { return g.budget_pages; });
  tier_gauge("radixkv_pool_capacity_bytes", "A tier's whole page pool.",
             [](const TierGauges& g) { return g.capacity_pages; });
  histogram(w, "radixkv_admit_duration_seconds", "Time in admit (refusals included).",
            m.admit_latency);
  histogram(w, "radixkv_commit_duration_seconds", "Time in commit.", m.commit_latency);
  histogram(w, "radixkv_finish_duration_seconds", "Time in finish.", m.finish_latency);
  if (m.curve) write_curve(w, *m.curve);
}

}  // namespace radixkv
