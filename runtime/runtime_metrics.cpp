// RuntimeMetrics: merging snapshots, PrefixCacheRuntime's snapshot, and the exposition. The names
// and their meaning are listed in docs/metrics.md; a test reads them back with Python's parser.
#include "runtime/runtime_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "eviction/quota_policy.h"
#include "eviction/retention_layer.h"
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
  for (const LowerTierMetrics& from : o.lower) {
    const auto same = [&](const LowerTierMetrics& l) { return l.tier == from.tier; };
    const auto it = std::find_if(lower.begin(), lower.end(), same);
    if (it == lower.end()) {
      lower.push_back(from);
      continue;
    }
    LowerTierMetrics& to = *it;
    for (uint64_t LowerTierMetrics::*counter : kLowerTierCounters) to.*counter += from.*counter;
    to.stored_bytes += from.stored_bytes;
    to.capacity_bytes += from.capacity_bytes;
    to.has_bytes = to.has_bytes || from.has_bytes;
  }
  if (o.retention) {
    RetentionGauges& to = retention ? *retention : retention.emplace();
    to.holds += o.retention->holds;
    to.releases += o.retention->releases;
    to.protected_pages += o.retention->protected_pages;
  }
  for (const NamespaceGauges& from : o.quotas) {
    const auto it = std::find_if(quotas.begin(), quotas.end(), [&](const NamespaceGauges& q) {
      return q.name_space == from.name_space;
    });
    if (it == quotas.end()) {
      quotas.insert(std::upper_bound(quotas.begin(), quotas.end(), from,
                                     [](const NamespaceGauges& a, const NamespaceGauges& b) {
                                       return a.name_space < b.name_space;
                                     }),
                    from);
      continue;
    }
    it->cached_pages += from.cached_pages;
    it->min_pages += from.min_pages;
    it->max_pages += from.max_pages;
  }
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

uint64_t RuntimeMetrics::remote_only_loaded_pages() const {
  uint64_t others = 0;
  for (const LowerTierMetrics& l : lower) {
    if (l.tier != "remote") others += l.loaded_pages;
  }
  // The tiers' own counts and the runtime's agree unless a load's pages were not used (a copy
  // that threw): never export a wrapped-around count.
  return remote_loaded_pages > others ? remote_loaded_pages - others : 0;
}

namespace {

// What each tier below gained since `attached` was read (the same tiers, in the same order);
// gauges as they are now.
void since_attached(std::vector<LowerTierMetrics>& now,
                    const std::vector<LowerTierMetrics>& attached) {
  for (std::size_t i = 0; i < now.size() && i < attached.size(); ++i) {
    LowerTierMetrics& n = now[i];
    const LowerTierMetrics& a = attached[i];
    if (n.tier != a.tier) continue;
    for (uint64_t LowerTierMetrics::*counter : kLowerTierCounters) {
      n.*counter -= std::min(n.*counter, a.*counter);
    }
  }
}

// Evictable device pages a retention layer protects: the device policy's, or with quotas each
// group's (RuntimeConfig::quotas wraps one layer per group).
uint64_t protected_pages(const EvictionPolicy& policy, std::size_t quota_groups) {
  const auto of = [](const EvictionPolicy& p) {
    const auto* layer = dynamic_cast<const RetentionLayer*>(&p);
    return layer != nullptr ? layer->protected_pages() : 0;
  };
  const auto* quota = dynamic_cast<const QuotaPolicy*>(&policy);
  if (quota == nullptr) return of(policy);
  uint64_t pages = 0;
  for (std::size_t i = 0; i <= quota_groups; ++i) pages += of(quota->group_policy(i));
  return pages;
}

}  // namespace

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
  if (remote_ != nullptr) {
    remote_->add_metrics(m.lower);
    since_attached(m.lower, lower_attached_);
  }
  const auto* quota = dynamic_cast<const QuotaPolicy*>(&tree_.policy());
  if (quota != nullptr) {
    for (const QuotaPages& q : quota->quotas()) {
      m.quotas.push_back(
          {q.name_space, tree_ledger_.namespace_pages(q.name_space), q.min_pages, q.max_pages});
    }
  }
  if (retention_) {
    m.retention = RetentionGauges{
        s.holds, s.releases,
        protected_pages(tree_.policy(), quota != nullptr ? quota->quotas().size() : 0)};
  }
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
  std::string_view tier;
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
  // The tiers below the local ones: each reporting one but the remote tier by its label; the
  // remote label gets the rest of the runtime's remote hits (all of them without such tiers).
  std::vector<const LowerTierMetrics*> below;  // reporting, other than remote
  const LowerTierMetrics* remote = nullptr;
  for (const LowerTierMetrics& l : m.lower) {
    if (l.tier == "remote") {
      remote = &l;
    } else {
      below.push_back(&l);
    }
  }
  const uint64_t remote_pages = m.remote_only_loaded_pages();
  const uint32_t page = std::max<uint32_t>(m.page_tokens, 1);
  std::vector<TierValue> hits = {{"device", m.device_hit_tokens}, {"host", m.host_hit_tokens}};
  for (const LowerTierMetrics* l : below) hits.push_back({l->tier, l->loaded_pages * page});
  hits.push_back({"remote", remote_pages * page});
  per_tier(w, "radixkv_hit_tokens_total",
           "Prompt tokens served from the cache, by the tier that held them at admit.", hits);
  counter(w, "radixkv_prefill_tokens_total", "Prompt tokens left to compute at admit.",
          m.prefill_tokens);
  counter(w, "radixkv_decode_tokens_total", "Tokens appended by decoding.", m.decode_tokens);
  per_tier(w, "radixkv_pages_inserted_total", "Computed pages the cache took.",
           {{"device", m.inserted_pages}});
  counter(w, "radixkv_pages_duplicate_total", "Computed pages the cache already held (released).",
          m.duplicate_pages);
  std::vector<TierValue> evicted = {{"device", m.evicted_pages}};
  if (m.host) evicted.push_back({"host", m.host_evicted_pages});
  for (const LowerTierMetrics* l : below) {
    if (l->has_bytes) evicted.push_back({l->tier, l->evicted_pages});
  }
  per_tier(w, "radixkv_pages_evicted_total",
           "Cached pages evicted from a tier (from the device to the host tier under write-back).",
           evicted);
  std::vector<TierValue> loads = {{"host", m.host_loaded_pages}};
  for (const LowerTierMetrics* l : below) loads.push_back({l->tier, l->loaded_pages});
  loads.push_back({"remote", remote_pages});
  per_tier(w, "radixkv_pages_loaded_total", "Pages copied to the device from a lower tier.", loads);
  std::vector<TierValue> writes = {{"host", m.host_written_pages}};
  for (const LowerTierMetrics* l : below) writes.push_back({l->tier, l->written_pages});
  if (remote != nullptr) writes.push_back({"remote", remote->written_pages});
  per_tier(w, "radixkv_pages_written_total",
           "Pages written to a lower tier (copied from the device to the host tier; written to "
           "the drive or the store, once complete).",
           writes);
  if (!m.lower.empty()) {
    w.family("radixkv_tier_load_wait_seconds_total", MetricType::kCounter,
             "Time admit waited for a tier below the local ones to load pages.");
    for (const LowerTierMetrics& l : m.lower) {
      const std::array<Label, 1> labels{{{"tier", l.tier}}};
      w.sample(labels, static_cast<double>(l.load_wait_ns) * 1e-9);
    }
  }
  std::vector<TierValue> read_bytes, written_bytes;
  for (const LowerTierMetrics& l : m.lower) {
    if (!l.has_bytes) continue;
    read_bytes.push_back({l.tier, l.read_bytes});
    written_bytes.push_back({l.tier, l.written_bytes});
  }
  if (!read_bytes.empty()) {
    per_tier(w, "radixkv_tier_read_bytes_total", "Bytes read from a tier below the local ones.",
             read_bytes);
    per_tier(w, "radixkv_tier_written_bytes_total",
             "Bytes written to a tier below the local ones (writes complete).", written_bytes);
  }
  gauge(w, "radixkv_live_sequences", "Sequences admitted and not yet finished or aborted.",
        m.live_sequences);
  // Byte gauges: the local tiers' pages times their size; a tier below counts its own bytes.
  struct TierBytes {
    std::string_view tier;
    uint64_t cached, budget, capacity;
  };
  std::vector<TierBytes> tiers;
  const auto local = [&](std::string_view tier, const TierGauges& g) {
    tiers.push_back({tier, g.cached_pages * g.bytes_per_page, g.budget_pages * g.bytes_per_page,
                     g.capacity_pages * g.bytes_per_page});
  };
  local("device", m.device);
  if (m.host) local("host", *m.host);
  for (const LowerTierMetrics& l : m.lower) {
    if (l.has_bytes) tiers.push_back({l.tier, l.stored_bytes, l.capacity_bytes, l.capacity_bytes});
  }
  const auto tier_gauge = [&](const char* name, const char* help, auto field) {
    w.family(name, MetricType::kGauge, help);
    for (const TierBytes& t : tiers) {
      const std::array<Label, 1> labels{{{"tier", t.tier}}};
      w.sample(labels, t.*field);
    }
  };
  tier_gauge("radixkv_cached_bytes", "KV bytes the cache holds on a tier.", &TierBytes::cached);
  tier_gauge("radixkv_cache_budget_bytes", "The cache's budget on a tier.", &TierBytes::budget);
  tier_gauge("radixkv_pool_capacity_bytes", "A tier's whole page pool.", &TierBytes::capacity);
  const uint64_t page_bytes = m.device.bytes_per_page;
  if (m.retention) {
    counter(w, "radixkv_session_holds_total", "Session holds taken (hold()).", m.retention->holds);
    counter(w, "radixkv_session_releases_total", "Session holds released (release()).",
            m.retention->releases);
    gauge(w, "radixkv_protected_bytes",
          "Evictable device bytes a session hold or a retention hint above the default priority "
          "protects.",
          m.retention->protected_pages * page_bytes);
  }
  if (!m.quotas.empty()) {
    std::vector<std::string> names;
    for (const NamespaceGauges& q : m.quotas) names.push_back(std::to_string(q.name_space));
    const auto namespace_gauge = [&](const char* name, const char* help, auto field) {
      w.family(name, MetricType::kGauge, help);
      for (std::size_t i = 0; i < m.quotas.size(); ++i) {
        const std::array<Label, 1> labels{{{"namespace", names[i]}}};
        w.sample(labels, m.quotas[i].*field * page_bytes);
      }
    };
    namespace_gauge("radixkv_namespace_cached_bytes",
                    "Device bytes a namespace with a quota holds, pinned pages included.",
                    &NamespaceGauges::cached_pages);
    namespace_gauge("radixkv_namespace_quota_min_bytes", "A namespace's quota: its floor.",
                    &NamespaceGauges::min_pages);
    namespace_gauge("radixkv_namespace_quota_max_bytes", "A namespace's quota: its soft cap.",
                    &NamespaceGauges::max_pages);
  }
  histogram(w, "radixkv_admit_duration_seconds", "Time in admit (refusals included).",
            m.admit_latency);
  histogram(w, "radixkv_commit_duration_seconds", "Time in commit.", m.commit_latency);
  histogram(w, "radixkv_finish_duration_seconds", "Time in finish.", m.finish_latency);
  if (m.curve) write_curve(w, *m.curve);
}

}  // namespace radixkv
