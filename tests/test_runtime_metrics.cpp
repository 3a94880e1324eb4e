// The runtime's metrics (runtime/runtime_metrics.h, issue 33): every exported counter, gauge and
// histogram count, read back by Python's prometheus_client, against what the caller counted from
// the runtime's own results; the live curve against a PromptMrc fed the same prompts; a
// SharedRuntime's exposition against its shards', the curve's sizes summed; the tiers below the
// local ones (disk, remote) split by label on a hand-built run; holds and quotas.
#include <doctest/doctest.h>

#include <deque>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "kv_store/page_backend.h"
#include "metrics/prometheus.h"
#include "metrics/prompt_mrc.h"
#include "runtime/lower_tiers.h"
#include "runtime/prefix_cache_runtime.h"
#include "runtime/shared_runtime.h"
#include "tests/prometheus_dump.h"

using namespace radixkv;
using radixkv::testing::read_exposition;
using radixkv::testing::sample_value;

namespace {

constexpr uint32_t kPage = 4;
const KvLayout kLayout{1, 1, 4, 2, kPage};

// Prompts that share prefixes: one of four system prompts, then a few tokens of their own.
std::vector<TokenId> make_prompt(std::mt19937& rng) {
  std::vector<TokenId> prompt;
  const auto system = static_cast<TokenId>(rng() % 4);
  const uint32_t system_tokens = 8 + 4 * (system % 3);
  for (uint32_t i = 0; i < system_tokens; ++i) prompt.push_back(1000 * (system + 1) + i);
  const uint32_t own = 1 + rng() % 14;
  for (uint32_t i = 0; i < own; ++i) prompt.push_back(static_cast<TokenId>(rng() % 50));
  return prompt;
}

// What the caller counts from the runtime's results.
struct Tally {
  uint64_t admit_calls = 0, admitted = 0, no_space = 0, too_large = 0;
  uint64_t commit_calls = 0, finish_calls = 0, aborts = 0;
  uint64_t prompt_tokens = 0, device_hits = 0, host_hits = 0, remote_hits = 0, prefill = 0;
  uint64_t decode = 0, new_pages = 0, duplicate_pages = 0;
};

std::string exposition(const PrefixCacheRuntime& runtime) {
  std::ostringstream out;
  runtime.write_metrics(out);
  return out.str();
}

// A tier below the local ones that keeps the hashes of the pages leaving the trie whose first
// token is below `keep_below` (no bytes), loads the leading run it holds, and reports itself as
// `label`, each page counted as kFakePageBytes.
constexpr uint64_t kFakePageBytes = 100;
class FakeTier final : public RemotePages {
 public:
  FakeTier(std::string_view label, TokenId keep_below) : label_(label), keep_below_(keep_below) {}
  uint32_t load(const PageHash&, std::span<const PageHash> hashes, std::span<const TokenId>,
                PagePool&, std::span<const PageId> pages) override {
    uint32_t run = 0;
    while (run < hashes.size() && run < pages.size() && held_.contains(hashes[run])) ++run;
    loaded_ += run;
    return run;
  }
  void attach_pools(PagePool*, PagePool*, PageArrivals*) override {}
  void stored(Tier, Namespace, std::optional<PageHash>, std::span<const PageHash>,
              std::span<const TokenId>) override {}
  void removed(Tier, std::span<const PageHash>) override {}
  void cleared() override {}
  void dropping(const TreePage& page) override {
    if (page.tokens[0] < keep_below_ && held_.insert(page.hash).second) ++written_;
  }
  void add_metrics(std::vector<LowerTierMetrics>& out) const override {
    const bool disk = label_ == "disk";  // a disk counts bytes, a remote store does not
    out.push_back({.tier = label_,
                   .loaded_pages = loaded_,
                   .written_pages = written_,
                   .read_bytes = disk ? loaded_ * kFakePageBytes : 0,
                   .written_bytes = disk ? written_ * kFakePageBytes : 0,
                   .load_wait_ns = 1000 * loaded_,
                   .has_bytes = disk,
                   .stored_bytes = disk ? held_.size() * kFakePageBytes : 0,
                   .capacity_bytes = disk ? 64 * kFakePageBytes : 0});
  }

 private:
  std::string_view label_;
  TokenId keep_below_;
  std::unordered_set<PageHash, PageHashKey> held_;
  uint64_t loaded_ = 0, written_ = 0;
};

}  // namespace

TEST_CASE("runtime metrics: every counter is what the caller counted, read by prometheus_client") {
  PagePool device(kLayout, 12);
  PagePool host(kLayout, 24, make_host_backend());
  TierConfig tiers;
  tiers.host.pool = &host;
  PrefixCacheRuntime runtime(device, {}, tiers);
  runtime.start_miss_ratio_curve();
  runtime.time_calls(1);  // every call, so that the histograms count them all
  // The curve's oracle: the same sampler fed the admitted prompts, sized to both tiers' budgets.
  metrics::PromptMrc oracle_curve(kPage, 12 + 24, metrics::ShardsConfig{});

  std::mt19937 rng(11);
  Tally t;
  std::deque<std::pair<SeqHandle, std::vector<TokenId>>> live;
  const auto finish_oldest = [&] {
    const SeqHandle seq = live.front().first;
    live.pop_front();
    const CommitResult c = runtime.finish(seq);
    ++t.finish_calls;
    t.new_pages += c.new_pages;
    t.duplicate_pages += c.duplicate_pages;
  };
  for (int i = 0; i < 300; ++i) {
    std::vector<TokenId> prompt = make_prompt(rng);
    if (i == 150) prompt.assign(13 * kPage, 7);  // more pages than the device pool: too large
    const Request request{
        .id = static_cast<uint64_t>(i), .name_space = rng() % 2, .prompt = prompt};
    const AdmitResult a = runtime.admit(request);
    ++t.admit_calls;
    if (!a.ok()) {
      (a.status == RuntimeStatus::kNoSpace ? t.no_space : t.too_large) += 1;
      if (!live.empty()) finish_oldest();
      continue;
    }
    runtime.wait_load(a.load_ticket);
    ++t.admitted;
    oracle_curve.access(request.name_space, prompt);
    t.prompt_tokens += prompt.size();
    t.device_hits += a.device_hit_tokens;
    t.host_hits += a.host_hit_tokens;
    t.remote_hits += a.remote_hit_tokens;
    t.prefill += prompt.size() - a.reused_tokens;
    if (i % 9 == 0) {
      runtime.abort(a.seq);
      ++t.aborts;
      continue;
    }
    const CommitResult c = runtime.commit(a.seq, static_cast<uint32_t>(prompt.size()));
    ++t.commit_calls;
    t.new_pages += c.new_pages;
    t.duplicate_pages += c.duplicate_pages;
    if (i % 2 == 0 && runtime.append_token(a.seq, 3).ok()) ++t.decode;
    live.emplace_back(a.seq, std::move(prompt));
    if (live.size() > 2) finish_oldest();
  }
  while (!live.empty()) finish_oldest();
  runtime.check_accounting();
  // The run exercised what the counters count.
  REQUIRE(t.no_space > 0);
  REQUIRE(t.too_large == 1);
  REQUIRE(t.device_hits > 0);
  REQUIRE(t.host_hits > 0);

  const nlohmann::json m = read_exposition(exposition(runtime));
  const auto value = [&](const std::string& key) { return sample_value(m, key); };
  CHECK(value("radixkv_requests_total{}") == t.admitted);
  CHECK(value("radixkv_admit_refusals_total{reason=no_space}") == t.no_space);
  CHECK(value("radixkv_admit_refusals_total{reason=too_large}") == t.too_large);
  CHECK(value("radixkv_requests_finished_total{}") == t.finish_calls);
  CHECK(value("radixkv_requests_aborted_total{}") == t.aborts);
  CHECK(value("radixkv_prompt_tokens_total{}") == t.prompt_tokens);
  CHECK(value("radixkv_hit_tokens_total{tier=device}") == t.device_hits);
  CHECK(value("radixkv_hit_tokens_total{tier=host}") == t.host_hits);
  CHECK(value("radixkv_hit_tokens_total{tier=remote}") == t.remote_hits);
  CHECK(value("radixkv_prefill_tokens_total{}") == t.prefill);
  CHECK(value("radixkv_decode_tokens_total{}") == t.decode);
  CHECK(value("radixkv_pages_inserted_total{tier=device}") == t.new_pages);
  CHECK(value("radixkv_pages_duplicate_total{}") == t.duplicate_pages);
  // Every host hit page was copied to the device once.
  CHECK(value("radixkv_pages_loaded_total{tier=host}") == t.host_hits / kPage);
  CHECK(value("radixkv_pages_loaded_total{tier=remote}") == 0);
  const TreeStats& tree = runtime.tree().stats();
  CHECK(value("radixkv_pages_evicted_total{tier=device}") == runtime.stats().evicted_pages);
  CHECK(value("radixkv_pages_evicted_total{tier=host}") == tree.host_evicted_pages);
  CHECK(value("radixkv_pages_written_total{tier=host}") == tree.written_pages);
  CHECK(tree.written_pages > 0);
  CHECK(value("radixkv_live_sequences{}") == 0);
  const uint64_t page_bytes = device.bytes_per_page();
  CHECK(value("radixkv_cached_bytes{tier=device}") == runtime.cached_pages() * page_bytes);
  CHECK(value("radixkv_cached_bytes{tier=host}") ==
        runtime.tree().host_cached_pages() * host.bytes_per_page());
  CHECK(value("radixkv_pool_capacity_bytes{tier=device}") == 12 * page_bytes);
  CHECK(value("radixkv_pool_capacity_bytes{tier=host}") == 24 * host.bytes_per_page());
  CHECK(value("radixkv_cache_budget_bytes{tier=device}") == 12 * page_bytes);
  // Each call is timed once, refusals included.
  CHECK(value("radixkv_admit_duration_seconds_count{}") == t.admit_calls);
  CHECK(value("radixkv_admit_duration_seconds_bucket{le=+Inf}") == t.admit_calls);
  CHECK(value("radixkv_commit_duration_seconds_count{}") == t.commit_calls);
  CHECK(value("radixkv_finish_duration_seconds_count{}") == t.finish_calls);
  CHECK(value("radixkv_admit_duration_seconds_sum{}") > 0);
  CHECK(m.at("types").at("radixkv_admit_duration_seconds") == "histogram");
  CHECK(m.at("types").at("radixkv_requests") == "counter");

  // The live curve: what the same sampler says of the same prompts.
  CHECK(value("radixkv_mrc_prompt_tokens_total{}") == t.prompt_tokens);
  const std::vector<metrics::MrcPoint> want = oracle_curve.curve();
  for (const metrics::MrcPoint& p : want) {
    const std::string label = "{multiple=" + metrics::format_value(p.multiple) + "}";
    CHECK(value("radixkv_mrc_hit_ratio" + label) == doctest::Approx(p.hit_rate).epsilon(1e-12));
    CHECK(value("radixkv_mrc_capacity_tokens" + label) == p.capacity_tokens);
  }
  CHECK(want[5].hit_rate > want[0].hit_rate);  // a curve that says something
  CHECK(value("radixkv_mrc_memory_bytes{}") == oracle_curve.memory_bytes());
}

TEST_CASE(
    "runtime metrics: no curve until started, one call in 8 timed (none when off), a curve needs "
    "a cache of 4 pages") {
  PagePool pool(kLayout, 8);
  {
    PrefixCacheRuntime runtime(pool);
    CHECK(runtime.miss_ratio_curve() == nullptr);
    const std::string text = exposition(runtime);
    CHECK(text.find("radixkv_mrc_") == std::string::npos);
    CHECK(text.find("radixkv_requests_total 0\n") != std::string::npos);
    const std::vector<TokenId> prompt = {1, 2, 3, 4, 5, 6};
    const auto run_one = [&] {
      const AdmitResult a = runtime.admit({.id = 1, .name_space = 0, .prompt = prompt});
      REQUIRE(a.ok());
      runtime.commit(a.seq, 6);
      runtime.finish(a.seq);
    };
    CHECK(runtime.timing_period() == PrefixCacheRuntime::kDefaultTimingPeriod);
    constexpr int kCalls = 1600;
    for (int i = 0; i < kCalls; ++i) run_one();
    // One call in 8 drawn at random: 200 expected of each, binomial sd 13.2; +-6 sd.
    RuntimeMetrics m = runtime.metrics();
    for (const metrics::LatencyHistogram* h :
         {&m.admit_latency, &m.commit_latency, &m.finish_latency}) {
      CHECK(h->count() >= 120);
      CHECK(h->count() <= 280);
    }
    CHECK(m.admit_latency.count() != m.finish_latency.count());  // drawn, not one in turn
    runtime.time_calls(0);
    for (int i = 0; i < 100; ++i) run_one();
    const RuntimeMetrics off = runtime.metrics();
    CHECK(off.admits == kCalls + 100);
    CHECK(off.admit_latency.count() == m.admit_latency.count());
    CHECK(off.finish_latency.count() == m.finish_latency.count());
  }
  RuntimeConfig config;
  config.cache_bytes = 3 * pool.bytes_per_page();
  config.high_watermark = config.low_watermark = 1.0;
  PrefixCacheRuntime small(pool, config);
  CHECK_THROWS_WITH_AS(small.start_miss_ratio_curve(), doctest::Contains("at least 4 pages"),
                       std::invalid_argument);
  CHECK(small.miss_ratio_curve() == nullptr);
}

TEST_CASE("SharedRuntime metrics: the shards summed, the curve's sizes and hits too") {
  constexpr uint32_t kShards = 3;
  SharedRuntime shared(kLayout, 40, kShards);
  shared.start_miss_ratio_curve();
  shared.time_calls(1);
  std::vector<metrics::PromptMrc> oracle;
  for (uint32_t s = 0; s < kShards; ++s) oracle.emplace_back(kPage, shared.shard_size(s).pages);
  std::mt19937 rng(5);
  uint64_t prompt_tokens = 0;
  for (int i = 0; i < 120; ++i) {
    const std::vector<TokenId> prompt = make_prompt(rng);
    const Namespace ns = rng() % 6;
    const SharedAdmit a = shared.admit({.id = 0, .name_space = ns, .prompt = prompt});
    REQUIRE(a.ok());
    oracle[shared.shard_of(ns)].access(ns, prompt);
    prompt_tokens += prompt.size();
    shared.commit(a.handle, static_cast<uint32_t>(prompt.size()));
    shared.finish(a.handle);
  }
  std::ostringstream out;
  shared.write_metrics(out);
  const nlohmann::json m = read_exposition(out.str());
  const auto value = [&](const std::string& key) { return sample_value(m, key); };
  CHECK(value("radixkv_requests_total{}") == 120);
  CHECK(value("radixkv_prompt_tokens_total{}") == prompt_tokens);
  CHECK(value("radixkv_hit_tokens_total{tier=device}") == shared.stats().reused_tokens);
  CHECK(value("radixkv_pool_capacity_bytes{tier=device}") == 40 * kLayout.bytes_per_page());
  CHECK(value("radixkv_finish_duration_seconds_count{}") == 120);
  for (std::size_t i = 0; i < metrics::kMrcMultiples.size(); ++i) {
    double hits = 0;
    uint64_t capacity = 0;
    for (const metrics::PromptMrc& c : oracle) {
      hits += c.curve()[i].hit_rate * static_cast<double>(c.prompt_tokens());
      capacity += c.curve()[i].capacity_tokens;
    }
    const std::string label = "{multiple=" + metrics::format_value(metrics::kMrcMultiples[i]) + "}";
    CHECK(value("radixkv_mrc_capacity_tokens" + label) == capacity);
    CHECK(value("radixkv_mrc_hit_ratio" + label) ==
          doctest::Approx(hits / static_cast<double>(prompt_tokens)).epsilon(1e-12));
  }
}

TEST_CASE("the Grafana dashboard (docs/grafana-dashboard.json) queries only exported samples") {
  // Every tier and option that adds families: a host tier, a disk and a remote tier below, a
  // retention layer, quotas, the curve.
  PagePool device(kLayout, 8);
  PagePool host(kLayout, 8, make_host_backend());
  FakeTier disk("disk", 1000), remote("remote", 1000);
  LowerTiers lower({&disk, &remote});
  TierConfig tiers;
  tiers.host.pool = &host;
  tiers.remote = &lower;
  RuntimeConfig config;
  config.retention = RetentionConfig{};
  config.quotas = {{.name_space = 1, .min = 0.25, .max = 0.5}};
  PrefixCacheRuntime runtime(device, config, tiers);
  runtime.start_miss_ratio_curve();
  const nlohmann::json m = read_exposition(exposition(runtime));
  std::set<std::string> exported;
  for (const auto& [key, value] : m.at("samples").items()) {
    exported.insert(key.substr(0, key.find('{')));
  }
  const nlohmann::json dashboard = nlohmann::json::parse(
      std::ifstream(std::string(RADIXKV_TESTS_DIR) + "/../docs/grafana-dashboard.json"));
  const std::regex name("radixkv_[a-z_]+");
  std::size_t queried = 0;
  for (const auto& panel : dashboard.at("panels")) {
    for (const auto& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name);
           it != std::sregex_iterator(); ++it) {
        CAPTURE(expr);
        if (it->str().starts_with("radixkv_router_")) continue;  // test_router_feed checks those
        CHECK_MESSAGE(exported.contains(it->str()), it->str() << " is not exported");
        ++queried;
      }
    }
  }
  CHECK(queried >= 15);
}

TEST_CASE(
    "runtime metrics: the tiers below by label: a page written then loaded back counts once each, "
    "and a new runtime counts from its start") {
  // A prompt of 4 pages and a token. The disk keeps the pages that leave the trie starting below
  // token 8 (the first two), the remote tier all four: the prompt admitted again reuses 4 pages,
  // 2 from the disk and the 2 after them from the remote tier.
  PagePool pool(kLayout, 12);
  FakeTier disk("disk", 8), remote("remote", 1000);
  LowerTiers lower({&disk, &remote});
  std::vector<TokenId> prompt(4 * kPage + 1);
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<TokenId>(i);
  const auto run = [&](PrefixCacheRuntime& runtime) {
    const AdmitResult a = runtime.admit({.id = 0, .name_space = 0, .prompt = prompt});
    REQUIRE(a.ok());
    runtime.commit(a.seq, static_cast<uint32_t>(prompt.size()));
    runtime.finish(a.seq);
    runtime.evict(runtime.cached_pages());
    return a;
  };
  for (int life = 0; life < 2; ++life) {
    CAPTURE(life);
    TierConfig tiers;
    tiers.remote = &lower;
    PrefixCacheRuntime runtime(pool, {}, tiers);
    const AdmitResult first = run(runtime);  // life 1: the pages are below from the start
    const AdmitResult again = run(runtime);
    CHECK(first.remote_hit_tokens == (life == 0 ? 0 : 4 * kPage));
    CHECK(again.remote_hit_tokens == 4 * kPage);
    const nlohmann::json m = read_exposition(exposition(runtime));
    const auto value = [&](const std::string& key) { return sample_value(m, key); };
    const double loads = life == 0 ? 1 : 2;  // admits that loaded the pages back
    CHECK(value("radixkv_hit_tokens_total{tier=disk}") == loads * 2 * kPage);
    CHECK(value("radixkv_hit_tokens_total{tier=remote}") == loads * 2 * kPage);
    CHECK(value("radixkv_hit_tokens_total{tier=device}") == 0);
    CHECK(value("radixkv_pages_loaded_total{tier=disk}") == loads * 2);
    CHECK(value("radixkv_pages_loaded_total{tier=remote}") == loads * 2);
    // Written once each, in the first life only: a page already held is not written again.
    CHECK(value("radixkv_pages_written_total{tier=disk}") == (life == 0 ? 2 : 0));
    CHECK(value("radixkv_pages_written_total{tier=remote}") == (life == 0 ? 4 : 0));
    CHECK(value("radixkv_pages_evicted_total{tier=device}") == 8);
    CHECK(value("radixkv_pages_evicted_total{tier=disk}") == 0);
    CHECK(m.at("samples").count("radixkv_pages_evicted_total{tier=remote}") == 0);
    CHECK(value("radixkv_tier_read_bytes_total{tier=disk}") == loads * 2 * kFakePageBytes);
    CHECK(value("radixkv_tier_written_bytes_total{tier=disk}") ==
          (life == 0 ? 2 * kFakePageBytes : 0));
    CHECK(m.at("samples").count("radixkv_tier_read_bytes_total{tier=remote}") == 0);
    CHECK(value("radixkv_tier_load_wait_seconds_total{tier=disk}") ==
          doctest::Approx(loads * 2 * 1e-6));
    // Gauges are the tier's now, whatever runtime wrote them.
    CHECK(value("radixkv_cached_bytes{tier=disk}") == 2 * kFakePageBytes);
    CHECK(value("radixkv_pool_capacity_bytes{tier=disk}") == 64 * kFakePageBytes);
    CHECK(m.at("samples").count("radixkv_cached_bytes{tier=remote}") == 0);
  }
}

TEST_CASE("runtime metrics: a tier below that does not report itself counts as remote") {
  PagePool pool(kLayout, 12);
  FakeTier plain("remote", 1000);
  struct Silent final : RemotePages {  // forwards to `plain`, reports nothing
    explicit Silent(FakeTier& t) : tier(t) {}
    uint32_t load(const PageHash& parent, std::span<const PageHash> hashes,
                  std::span<const TokenId> tokens, PagePool& pool,
                  std::span<const PageId> pages) override {
      return tier.load(parent, hashes, tokens, pool, pages);
    }
    void attach_pools(PagePool*, PagePool*, PageArrivals*) override {}
    void stored(Tier, Namespace, std::optional<PageHash>, std::span<const PageHash>,
                std::span<const TokenId>) override {}
    void removed(Tier, std::span<const PageHash>) override {}
    void cleared() override {}
    void dropping(const TreePage& page) override { tier.dropping(page); }
    FakeTier& tier;
  } silent(plain);
  TierConfig tiers;
  tiers.remote = &silent;
  PrefixCacheRuntime runtime(pool, {}, tiers);
  const std::vector<TokenId> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int i = 0; i < 2; ++i) {
    const AdmitResult a = runtime.admit({.id = 0, .name_space = 0, .prompt = prompt});
    REQUIRE(a.ok());
    runtime.commit(a.seq, 9);
    runtime.finish(a.seq);
    runtime.evict(runtime.cached_pages());
  }
  const nlohmann::json m = read_exposition(exposition(runtime));
  CHECK(sample_value(m, "radixkv_hit_tokens_total{tier=remote}") == 2 * kPage);
  CHECK(sample_value(m, "radixkv_pages_loaded_total{tier=remote}") == 2);
  CHECK(m.at("samples").count("radixkv_pages_written_total{tier=remote}") == 0);
  CHECK(m.at("samples").count("radixkv_tier_load_wait_seconds_total{tier=remote}") == 0);
}

TEST_CASE("runtime metrics: session holds, protected bytes and quota namespaces") {
  PagePool pool(kLayout, 12);
  RuntimeConfig config;
  config.high_watermark = config.low_watermark = 1.0;
  config.retention = RetentionConfig{};
  config.quotas = {{.name_space = 1, .min = 0.25, .max = 0.5}, {.name_space = 3, .max = 1.0}};
  PrefixCacheRuntime runtime(pool, config);
  const auto run = [&](Namespace ns, uint64_t session, std::vector<TokenId> prompt) {
    const AdmitResult a =
        runtime.admit({.id = 0, .name_space = ns, .prompt = prompt, .session = session});
    REQUIRE(a.ok());
    const uint32_t committed =
        runtime.commit(a.seq, static_cast<uint32_t>(prompt.size())).new_pages;
    return committed + runtime.finish(a.seq).new_pages;
  };
  // Namespace 1 caches 3 pages (session 5), namespace 2 (no quota) 2 pages (session 6).
  CHECK(run(1, 5, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}) == 3);
  CHECK(run(2, 6, {1, 2, 3, 4, 5, 6, 7, 8, 9}) == 2);
  const uint64_t page_bytes = pool.bytes_per_page();
  const auto scrape = [&] { return read_exposition(exposition(runtime)); };
  nlohmann::json m = scrape();
  CHECK(sample_value(m, "radixkv_session_holds_total{}") == 0);
  CHECK(sample_value(m, "radixkv_protected_bytes{}") == 0);
  CHECK(sample_value(m, "radixkv_namespace_cached_bytes{namespace=1}") == 3 * page_bytes);
  CHECK(sample_value(m, "radixkv_namespace_cached_bytes{namespace=3}") == 0);
  CHECK(m.at("samples").count("radixkv_namespace_cached_bytes{namespace=2}") == 0);
  CHECK(sample_value(m, "radixkv_namespace_quota_min_bytes{namespace=1}") == 3 * page_bytes);
  CHECK(sample_value(m, "radixkv_namespace_quota_max_bytes{namespace=1}") == 6 * page_bytes);
  CHECK(sample_value(m, "radixkv_namespace_quota_min_bytes{namespace=3}") == 0);
  CHECK(sample_value(m, "radixkv_namespace_quota_max_bytes{namespace=3}") == 12 * page_bytes);
  // A hold protects the session's path (one node: its 3 pages), until released.
  runtime.hold(5, 100.0);
  m = scrape();
  CHECK(sample_value(m, "radixkv_session_holds_total{}") == 1);
  CHECK(sample_value(m, "radixkv_protected_bytes{}") == 3 * page_bytes);
  runtime.hold(6, 100.0);
  CHECK(sample_value(scrape(), "radixkv_protected_bytes{}") == 5 * page_bytes);
  runtime.release(5);
  m = scrape();
  CHECK(sample_value(m, "radixkv_session_releases_total{}") == 1);
  CHECK(sample_value(m, "radixkv_session_holds_total{}") == 2);
  CHECK(sample_value(m, "radixkv_protected_bytes{}") == 2 * page_bytes);
  // Without a retention layer or quotas, none of these families.
  PagePool other(kLayout, 4);
  const std::string plain = exposition(PrefixCacheRuntime(other));
  CHECK(plain.find("radixkv_session_") == std::string::npos);
  CHECK(plain.find("radixkv_namespace_") == std::string::npos);
  CHECK(plain.find("radixkv_protected_bytes") == std::string::npos);
}

TEST_CASE("RuntimeMetrics::merge: tiers below by label, quota namespaces by id, holds summed") {
  RuntimeMetrics a, b;
  a.lower = {{.tier = "disk",
              .loaded_pages = 1,
              .written_pages = 2,
              .has_bytes = true,
              .stored_bytes = 10,
              .capacity_bytes = 100}};
  b.lower = {{.tier = "remote", .loaded_pages = 7},
             {.tier = "disk",
              .loaded_pages = 3,
              .written_pages = 4,
              .has_bytes = true,
              .stored_bytes = 20,
              .capacity_bytes = 100}};
  a.quotas = {{.name_space = 4, .cached_pages = 1, .min_pages = 1, .max_pages = 2}};
  b.quotas = {{.name_space = 2, .cached_pages = 5, .min_pages = 0, .max_pages = 9},
              {.name_space = 4, .cached_pages = 3, .min_pages = 1, .max_pages = 2}};
  b.retention = RetentionGauges{2, 1, 6};
  a.merge(b);
  REQUIRE(a.lower.size() == 2);
  CHECK(a.lower[0].tier == "disk");
  CHECK(a.lower[0].loaded_pages == 4);
  CHECK(a.lower[0].written_pages == 6);
  CHECK(a.lower[0].stored_bytes == 30);
  CHECK(a.lower[0].capacity_bytes == 200);
  CHECK(a.lower[1].tier == "remote");
  CHECK(a.lower[1].loaded_pages == 7);
  REQUIRE(a.quotas.size() == 2);
  CHECK(a.quotas[0].name_space == 2);
  CHECK(a.quotas[0].cached_pages == 5);
  CHECK(a.quotas[1].name_space == 4);
  CHECK(a.quotas[1].cached_pages == 4);
  CHECK(a.quotas[1].max_pages == 4);
  REQUIRE(a.retention);
  CHECK(a.retention->holds == 2);
  CHECK(a.retention->protected_pages == 6);
}

TEST_CASE(
    "SharedRuntime metrics: quota namespaces summed over the shards, each shard's quota its own") {
  // Two shards of 20 pages, each with namespace 1's quota of its own budget: min 5, max 10.
  RuntimeConfig config;
  config.retention = RetentionConfig{};
  config.quotas = {{.name_space = 1, .min = 0.25, .max = 0.5}};
  SharedRuntime shared(kLayout, 40, 2, config);
  REQUIRE(shared.shard_size(0).pages == 20);
  REQUIRE(shared.shard_size(1).pages == 20);
  uint64_t pages = 0;
  for (const Namespace ns : {1u, 2u, 3u}) {
    const std::vector<TokenId> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const SharedAdmit a = shared.admit({.id = 0, .name_space = ns, .prompt = prompt});
    REQUIRE(a.ok());
    const uint32_t committed = shared.commit(a.handle, 9).new_pages;
    if (ns == 1) pages = committed;
    shared.finish(a.handle);
  }
  REQUIRE(pages == 2);
  std::ostringstream out;
  shared.write_metrics(out);
  const nlohmann::json m = read_exposition(out.str());
  const uint64_t page_bytes = kLayout.bytes_per_page();
  CHECK(sample_value(m, "radixkv_namespace_cached_bytes{namespace=1}") == pages * page_bytes);
  CHECK(sample_value(m, "radixkv_namespace_quota_min_bytes{namespace=1}") == 10 * page_bytes);
  CHECK(sample_value(m, "radixkv_namespace_quota_max_bytes{namespace=1}") == 20 * page_bytes);
  CHECK(sample_value(m, "radixkv_session_holds_total{}") == 0);
  CHECK(sample_value(m, "radixkv_protected_bytes{}") == 0);
}
