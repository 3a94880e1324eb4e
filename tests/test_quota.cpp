// Per-namespace quotas (eviction/quota_policy.h): the layer against an exact reference model,
// victim by victim, over random operations with several namespaces, for LRU and FIFO inside; a
// noisy tenant that cannot push a quiet one under its min through the runtime (and does without
// the quota); admission that finds everything evictable protected; bad quotas; the same rules
// over the host tier (HostTierConfig::quotas) with demotions from a small device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "eviction/quota_policy.h"
#include "runtime/prefix_cache_runtime.h"
#include "tests/test_policies_owner.h"

using namespace radixkv;
using radixkv::testing::RoomyEntries;

namespace {

// The reference model: a plain list of entries, scanned for every victim by the rule as the
// header states it, with the inner policy's order written out (LRU: the oldest last access; FIFO:
// the earliest creation; ties in link order, which unique clocks never produce here).
struct ModelEntry {
  uint64_t ns;
  uint64_t created;
  uint64_t last;  // tick of the last access
  uint32_t pages;
  bool linked;
};

struct Model {
  bool fifo;
  std::vector<QuotaPages> quotas;
  std::vector<ModelEntry> entries;  // index i is the policy's entry i

  uint64_t cached(uint64_t ns) const {
    uint64_t n = 0;
    for (const ModelEntry& e : entries) n += e.ns == ns ? e.pages : 0;
    return n;
  }
  const QuotaPages* quota(uint64_t ns) const {
    for (const QuotaPages& q : quotas)
      if (q.name_space == ns) return &q;
    return nullptr;
  }
  // The inner policy's victim among the linked entries that `in` admits.
  template <typename In>
  int inner_victim(In in) const {
    int best = -1;
    for (int i = 0; i < static_cast<int>(entries.size()); ++i) {
      const ModelEntry& e = entries[static_cast<size_t>(i)];
      if (!e.linked || e.pages == 0 || !in(e)) continue;
      const uint64_t key = fifo ? e.created : e.last;
      const ModelEntry* b = best < 0 ? nullptr : &entries[static_cast<size_t>(best)];
      if (b == nullptr || key < (fifo ? b->created : b->last)) best = i;
    }
    return best;
  }
  int victim() const {
    // Rule 1: the quota namespace furthest at or over its max (ties: smaller id).
    const QuotaPages* over = nullptr;
    for (const QuotaPages& q : quotas) {  // sorted by id
      const uint64_t pages = cached(q.name_space);
      if (pages < q.max_pages) continue;
      if (inner_victim([&](const ModelEntry& e) { return e.ns == q.name_space; }) < 0) continue;
      if (over == nullptr || pages - q.max_pages > cached(over->name_space) - over->max_pages)
        over = &q;
    }
    if (over != nullptr)
      return inner_victim([&](const ModelEntry& e) { return e.ns == over->name_space; });
    // Rule 2: each eligible group's inner victim; the oldest last access wins, quota namespaces
    // by id first, then the shared group.
    std::vector<int> candidates;
    for (const QuotaPages& q : quotas) {
      if (cached(q.name_space) <= q.min_pages) continue;
      candidates.push_back(inner_victim([&](const ModelEntry& e) { return e.ns == q.name_space; }));
    }
    candidates.push_back(inner_victim([&](const ModelEntry& e) { return quota(e.ns) == nullptr; }));
    int best = -1;
    for (int c : candidates) {
      if (c < 0) continue;
      if (best < 0 ||
          entries[static_cast<size_t>(c)].last < entries[static_cast<size_t>(best)].last)
        best = c;
    }
    return best;
  }
};

// The owner the policy sees: entries with room for their state, a namespace each, and the
// ledger's page counts taken from the model (pinned entries' pages included).
struct Ledger final : NamespaceLedger {
  const Model* model = nullptr;
  std::unordered_map<const EvictionEntry*, uint64_t> ns_of;
  uint64_t namespace_of(const EvictionEntry& e) const override { return ns_of.at(&e); }
  uint64_t namespace_pages(uint64_t ns) const override { return model->cached(ns); }
};

struct ModelRun {
  uint64_t victims = 0, protected_stops = 0;
};

ModelRun run_against_model(const char* spec, uint64_t seed) {
  CAPTURE(spec);
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto pick = [&](uint64_t n) {
    return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
  };
  // Namespaces 0..4: quotas on 1..3 with min/max drawn per run; 0 and 4 share the default group.
  std::vector<QuotaPages> quotas;
  for (uint64_t ns = 1; ns <= 3; ++ns) {
    const uint64_t min = pick(12);
    const uint64_t max = pick(3) == 0 ? std::numeric_limits<uint64_t>::max() : min + pick(20);
    quotas.push_back({ns, min, max});
  }
  Model model{std::string(spec) == "fifo", quotas, {}};
  Ledger ledger;
  ledger.model = &model;
  RoomyEntries entries;  // before the policy, which unlinks them when it goes (owner's order)
  QuotaPolicy policy([&] { return make_policy(spec); }, quotas);
  policy.attach(&ledger);
  REQUIRE(policy.state_bytes() <= radixkv::testing::RoomyEntry::kRoom);
  uint64_t clock = 0;
  ModelRun run;

  const auto touch = [&](size_t i) {
    AccessHint hint;
    hint.tick = ++clock;
    policy.on_access(entries[i], hint);
    model.entries[i].last = hint.tick;
  };
  for (int step = 0; step < 3000; ++step) {
    const uint64_t op = pick(10);
    if (op < 4 || model.entries.empty()) {  // a new entry, touched and linked (an insert)
      const uint64_t ns = pick(5);
      EvictionEntry& e = entries.emplace_back();
      e.pages = static_cast<uint32_t>(1 + pick(4));
      ledger.ns_of[&e] = ns;
      AccessHistory past;
      past.created = clock;
      policy.adopt(e, past);
      model.entries.push_back({ns, clock, 0, e.pages, false});
      touch(entries.size() - 1);
      policy.add(e);
      model.entries.back().linked = true;
    } else if (op < 6) {  // an access to an entry still cached, linked or not
      const size_t i = pick(model.entries.size());
      if (model.entries[i].pages > 0) touch(i);
    } else if (op < 7) {  // pin or unpin
      const size_t i = pick(model.entries.size());
      ModelEntry& m = model.entries[i];
      if (m.pages == 0) continue;
      if (m.linked) {
        policy.remove(entries[i]);
      } else {
        policy.add(entries[i]);
      }
      m.linked = !m.linked;
    } else {  // evict a few pages, one victim per page, as the tree asks
      for (uint64_t k = 1 + pick(6); k > 0; --k) {
        const int want = model.victim();
        EvictionEntry* got = policy.victim();
        if (want < 0) {
          REQUIRE(got == nullptr);
          ++run.protected_stops;
          break;
        }
        REQUIRE(got == &entries[static_cast<size_t>(want)]);
        ++run.victims;
        ModelEntry& m = model.entries[static_cast<size_t>(want)];
        --got->pages;
        --m.pages;
        if (m.pages == 0) {
          policy.remove(*got);
          m.linked = false;
        }
      }
    }
    size_t linked = 0;
    for (const ModelEntry& m : model.entries) linked += m.linked ? 1 : 0;
    REQUIRE(policy.size() == linked);
  }
  return run;
}

}  // namespace

TEST_CASE("quota: victims match the reference model, victim by victim, for lru and fifo") {
  for (const char* spec : {"lru", "fifo"}) {
    ModelRun all;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const ModelRun run = run_against_model(spec, seed);
      all.victims += run.victims;
      all.protected_stops += run.protected_stops;
    }
    // The runs exercised the rule, refusals included, not only its trivial case.
    CHECK(all.victims > 10000);
    CHECK(all.protected_stops > 20);
  }
}

namespace {

constexpr uint32_t kPageTokens = 4;
constexpr uint32_t kPoolPages = 64;
constexpr Namespace kQuiet = 1, kNoisy = 2;

// A prompt of `pages` whole pages plus one token, unique to (ns, index): its whole pages get
// cached.
std::vector<TokenId> prompt_of(Namespace ns, uint32_t index, uint32_t pages) {
  std::vector<TokenId> p(pages * kPageTokens + 1);
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = static_cast<TokenId>(ns * 1000000 + index * 1000 + i);
  return p;
}

// Eviction on demand only (watermarks at 1): each allocation evicts exactly its shortfall.
struct Tenants {
  explicit Tenants(std::vector<NamespaceQuota> quotas)
      : pool(KvLayout{1, 1, 4, 2, kPageTokens}, kPoolPages),
        counted(!quotas.empty()),
        runtime(pool,
                RuntimeConfig{
                    .high_watermark = 1.0, .low_watermark = 1.0, .quotas = std::move(quotas)}) {}

  AdmitResult serve(Namespace ns, uint32_t index, uint32_t pages) {
    const auto prompt = prompt_of(ns, index, pages);
    const AdmitResult r = runtime.admit({index, ns, prompt});
    if (!r.ok()) return r;
    runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
    runtime.finish(r.seq);
    runtime.check_accounting();  // the tree's verify() checks the per-namespace counters
    return r;
  }
  // The quiet tenant's cached pages, read from the tree's content (its prompts of 4 pages are
  // disjoint), so that a run without quotas, whose tree counts no namespace, is measured alike;
  // with quotas the tree's count must agree.
  uint64_t quiet_pages(uint32_t prompts) {
    uint64_t pages = 0;
    for (uint32_t i = 0; i < prompts; ++i)
      pages += runtime.cached_prefix(kQuiet, prompt_of(kQuiet, i, 4)) / kPageTokens;
    if (counted) CHECK(runtime.tree().namespace_pages(kQuiet) == pages);
    return pages;
  }

  PagePool pool;
  bool counted;
  PrefixCacheRuntime runtime;
};

// The quiet tenant caches 6 prompts of 4 pages (24 pages), then the noisy one floods 200 unique
// prompts of 4 pages: the quiet tenant's cached pages after the flood, how many of its prompts
// then hit in full (all their whole pages; the last token is always computed), and the most pages
// the noisy tenant held after any of its requests.
struct FloodResult {
  uint64_t quiet_pages = 0, quiet_full_hits = 0, noisy_peak = 0;
};
FloodResult flood(std::vector<NamespaceQuota> quotas) {
  Tenants t(std::move(quotas));
  FloodResult out;
  for (uint32_t i = 0; i < 6; ++i) REQUIRE(t.serve(kQuiet, i, 4).ok());
  REQUIRE(t.quiet_pages(6) == 24);
  for (uint32_t i = 0; i < 200; ++i) {
    REQUIRE(t.serve(kNoisy, i, 4).ok());
    out.noisy_peak = std::max(out.noisy_peak, t.runtime.tree().cached_pages() - t.quiet_pages(6));
  }
  out.quiet_pages = t.quiet_pages(6);
  // Newest first, so that a miss, whose insert evicts, comes after every hit.
  for (uint32_t i = 6; i-- > 0;) {
    const AdmitResult r = t.serve(kQuiet, i, 4);
    REQUIRE(r.ok());
    out.quiet_full_hits += r.reused_tokens == 4 * kPageTokens ? 1 : 0;
  }
  return out;
}

}  // namespace

TEST_CASE(
    "quota: a noisy tenant flooding unique prompts cannot push a quiet tenant under its min") {
  // Control: without quotas, LRU lets the flood take every quiet page, and the noisy tenant the
  // whole cache: the pool less the one page a finished prompt's partial last token held (each
  // admit evicts just its shortfall).
  const FloodResult plain = flood({});
  CHECK(plain.quiet_pages == 0);
  CHECK(plain.quiet_full_hits == 0);
  CHECK(plain.noisy_peak == kPoolPages - 1);
  // min 0.25 of 64 pages = 16: the quiet tenant's oldest pages go, page by page, until it holds
  // exactly its min: its two oldest prompts (whole leaves of 4 pages), four stay.
  const FloodResult guarded = flood({{kQuiet, 0.25, 1.0}});
  CHECK(guarded.quiet_pages == 16);
  CHECK(guarded.quiet_full_hits == 4);
  CHECK(guarded.noisy_peak == kPoolPages - 1 - 16);
  // A min as a size above what it holds: 32 pages of 64 bytes (1 layer x 1 head x 4 dims x 2
  // bytes x K and V x 4 tokens): none of its 24 pages goes.
  const FloodResult by_size = flood({{kQuiet, Watermark::of_bytes(32 * 64), 1.0}});
  CHECK(by_size.quiet_pages == 24);
  CHECK(by_size.quiet_full_hits == 6);
}

TEST_CASE("quota: a tenant at its max evicts its own pages first") {
  // The noisy tenant may hold half the budget (32 pages): every shortfall it meets beyond that is
  // taken from its own oldest pages, though the quiet tenant's (no quota, no min) are older.
  const FloodResult capped = flood({{kNoisy, 0.0, 0.5}});
  CHECK(capped.quiet_pages == 24);
  CHECK(capped.quiet_full_hits == 6);
  // Soft: it fills what the quiet tenant leaves (the max decides victims, it reserves nothing).
  CHECK(capped.noisy_peak == kPoolPages - 1 - 24);
}

TEST_CASE("quota: admission reports no space when everything evictable is under a min") {
  Tenants t({{kQuiet, 1.0, 1.0}});
  for (uint32_t i = 0; i < 12; ++i) REQUIRE(t.serve(kQuiet, i, 4).ok());  // 48 pages
  REQUIRE(t.runtime.tree().namespace_pages(kQuiet) == 48);
  // 16 pages are free; a prompt of 20 pages needs 21 and finds nothing it may evict.
  const AdmitResult refused = t.serve(kNoisy, 0, 20);
  CHECK(refused.status == RuntimeStatus::kNoSpace);
  CHECK(refused.evicted_pages == 0);
  CHECK(t.runtime.tree().namespace_pages(kQuiet) == 48);
  // The same without the quota evicts the quiet tenant's pages and admits.
  Tenants plain({});
  for (uint32_t i = 0; i < 12; ++i) REQUIRE(plain.serve(kQuiet, i, 4).ok());
  CHECK(plain.serve(kNoisy, 0, 20).ok());
}

TEST_CASE("quota: bad quotas are refused with the namespace and the reason") {
  PagePool pool(KvLayout{1, 1, 4, 2, kPageTokens}, kPoolPages);
  const auto refused = [&](std::vector<NamespaceQuota> quotas, const std::string& part) {
    CAPTURE(part);
    try {
      PrefixCacheRuntime runtime(pool, RuntimeConfig{.quotas = std::move(quotas)});
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  refused({{1, 0.6, 0.5}}, "namespace 1: min 0.6 (38 pages) is above max 0.5 (32 pages)");
  refused({{1, 0.6, 1.0}, {2, 0.5, 1.0}}, "the mins add up to 70 pages, more than the budget");
  refused({{3, 0.1, 1.0}, {3, 0.2, 1.0}}, "namespace 3 has two quotas");
  refused({{1, 1.5, 1.0}}, "namespace 1: min 1.5 is not a fraction of the budget in [0, 1]");
  refused({{1, 0.0, 0.0}}, "namespace 1: max 0 would keep nothing");
  refused({{1, Watermark::of_bytes(1 << 20), 1.0}},
          "namespace 1: min 1048576 bytes is more than the budget of 64 pages");
}

TEST_CASE("quota: the tree's per-namespace counts hold through a host tier and its loads") {
  for (const char* write : {"write_back", "write_through"}) {
    CAPTURE(write);
    const KvLayout layout{1, 1, 4, 2, kPageTokens};
    PagePool pool(layout, kPoolPages);
    PagePool host(layout, 2 * kPoolPages);
    TierConfig tiers;
    tiers.host.pool = &host;
    tiers.host.write_policy = write;
    PrefixCacheRuntime runtime(pool, RuntimeConfig{.quotas = {{1, 0.25, 0.5}, {2, 0.0, 0.25}}},
                               tiers);
    std::mt19937_64 rng(7);
    uint64_t loaded = 0;
    for (int step = 0; step < 400; ++step) {
      const Namespace ns = rng() % 4;
      // Prompts that share prefixes within a namespace: loads from the host, splits, demotions.
      const auto prompt = prompt_of(ns, static_cast<uint32_t>(rng() % 12), 1 + rng() % 6);
      const AdmitResult r = runtime.admit({static_cast<uint64_t>(step), ns, prompt});
      if (r.ok()) {
        loaded += r.host_hit_tokens;
        runtime.wait_load(r.load_ticket);
        runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
        runtime.finish(r.seq);
      }
      if (step % 50 == 49) runtime.evict(10);
      runtime.check_accounting();  // verify(): each namespace's count against its pages
    }
    CHECK(loaded > 0);
    CHECK(runtime.tree().stats().written_pages + runtime.tree().stats().dropped_pages > 0);
  }
}

namespace {

// The host tier's quotas (HostTierConfig::quotas): the quiet tenant's 6 prompts, then the noisy
// tenant's 200, through a device of 16 pages over a host of 64 under write-back, so that every
// device eviction demotes a page to the host and the flood passes through the host 12 times over.
// The result: how many of the quiet prompts then hit in full (re-served newest first, device or
// host), and the host hit tokens of those hits.
struct TieredFlood {
  uint64_t quiet_full_hits = 0, quiet_host_hit_tokens = 0, quiet_host_pages_after_flood = 0;
};
TieredFlood tiered_flood(std::vector<NamespaceQuota> device, std::vector<NamespaceQuota> host) {
  const KvLayout layout{1, 1, 4, 2, kPageTokens};
  PagePool pool(layout, 16);
  PagePool host_pool(layout, kPoolPages);
  TierConfig tiers;
  tiers.host.pool = &host_pool;
  tiers.host.quotas = std::move(host);
  const bool counted = !device.empty() || !tiers.host.quotas.empty();
  PrefixCacheRuntime runtime(
      pool, RuntimeConfig{.high_watermark = 1.0, .low_watermark = 1.0, .quotas = std::move(device)},
      tiers);
  const auto serve = [&](Namespace ns, uint32_t index) {
    const auto prompt = prompt_of(ns, index, 4);
    const AdmitResult r = runtime.admit({index, ns, prompt});
    REQUIRE(r.ok());
    runtime.wait_load(r.load_ticket);
    runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
    runtime.finish(r.seq);
    runtime.check_accounting();  // verify(): both tiers' per-namespace counters
    return r;
  };
  for (uint32_t i = 0; i < 6; ++i) serve(kQuiet, i);
  for (uint32_t i = 0; i < 200; ++i) serve(kNoisy, i);
  TieredFlood out;
  if (counted) out.quiet_host_pages_after_flood = runtime.tree().namespace_host_pages(kQuiet);
  for (uint32_t i = 6; i-- > 0;) {
    const AdmitResult r = serve(kQuiet, i);
    if (r.reused_tokens == 4 * kPageTokens) {
      ++out.quiet_full_hits;
      out.quiet_host_hit_tokens += r.host_hit_tokens;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("quota: a host min keeps a quiet tenant's demoted pages through a noisy flood") {
  // No quota: the flood's demotions take every quiet page off the host too.
  const TieredFlood plain = tiered_flood({}, {});
  CHECK(plain.quiet_full_hits == 0);
  // A device min of 4 pages (0.25 of 16) keeps the newest quiet prompt on the device; the rest
  // were demoted and the flood pushed them off the host.
  const TieredFlood device_only = tiered_flood({{kQuiet, 0.25, 1.0}}, {});
  CHECK(device_only.quiet_full_hits == 1);
  CHECK(device_only.quiet_host_hit_tokens == 0);
  CHECK(device_only.quiet_host_pages_after_flood == 0);
  // A host min of 24 pages (0.375 of 64): all 24 quiet pages were demoted and none leaves the
  // host, so every quiet prompt hits in full, from the host.
  const TieredFlood host_only = tiered_flood({}, {{kQuiet, 0.375, 1.0}});
  CHECK(host_only.quiet_host_pages_after_flood == 24);
  CHECK(host_only.quiet_full_hits == 6);
  CHECK(host_only.quiet_host_hit_tokens == 6 * 4 * kPageTokens);
  // Both: the device keeps the newest prompt, the host the other five.
  const TieredFlood both = tiered_flood({{kQuiet, 0.25, 1.0}}, {{kQuiet, 0.375, 1.0}});
  CHECK(both.quiet_host_pages_after_flood == 20);
  CHECK(both.quiet_full_hits == 6);
  CHECK(both.quiet_host_hit_tokens == 5 * 4 * kPageTokens);
}

TEST_CASE("quota: a host tenant at its max gives up its own host pages first") {
  // The noisy tenant may hold a quarter of the host (16 pages): once the host is full, its own
  // oldest host pages make room for its demotions, and the quiet tenant's (no quota) stay.
  const TieredFlood capped = tiered_flood({}, {{kNoisy, 0.0, 0.25}});
  CHECK(capped.quiet_host_pages_after_flood == 24);
  CHECK(capped.quiet_full_hits == 6);
}

TEST_CASE("quota: bad host quotas are refused naming the host tier") {
  const KvLayout layout{1, 1, 4, 2, kPageTokens};
  PagePool pool(layout, 16);
  PagePool host_pool(layout, kPoolPages);
  TierConfig tiers;
  tiers.host.pool = &host_pool;
  tiers.host.quotas = {{1, 0.6, 0.5}};
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(pool, RuntimeConfig{}, tiers),
                       doctest::Contains("host tier: quota: namespace 1: min 0.6"),
                       std::invalid_argument);
  TierConfig no_host;
  no_host.host.quotas = {{1, 0.5, 1.0}};
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(pool, RuntimeConfig{}, no_host),
                       doctest::Contains("quotas (HostTierConfig::quotas) need a host pool"),
                       std::invalid_argument);
}

TEST_CASE("quota: a device page dropped above host-only descendants releases them all, counted") {
  // Two tenants, each with a min of half a host of 4 pages. The noisy one's 2 pages are demoted
  // first; then a chain of three 1-page nodes of the quiet one is evicted a node at a time: the
  // grandchild and the child are demoted (the host is then full, both tenants at their min, no
  // host victim), so the top node's page is dropped, and with it its host-only child and
  // grandchild, the grandchild released while its parent must still be a node (the namespace
  // count walks up through it; ASan checks the walk).
  const KvLayout layout{1, 1, 4, 2, kPageTokens};
  PagePool pool(layout, 8);
  PagePool host_pool(layout, 4);
  TierConfig tiers;
  tiers.host.pool = &host_pool;
  tiers.host.quotas = {{kQuiet, 0.5, 1.0}, {kNoisy, 0.5, 1.0}};
  PrefixCacheRuntime runtime(pool, RuntimeConfig{.high_watermark = 1.0, .low_watermark = 1.0},
                             tiers);
  const auto serve = [&](Namespace ns, std::span<const TokenId> prompt) {
    const AdmitResult r = runtime.admit({0, ns, prompt});
    REQUIRE(r.ok());
    runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
    runtime.finish(r.seq);
  };
  serve(kNoisy, prompt_of(kNoisy, 0, 2));
  CHECK(runtime.evict(2) == 2);
  REQUIRE(runtime.tree().namespace_host_pages(kNoisy) == 2);
  const std::vector<TokenId> chain = prompt_of(kQuiet, 0, 3);
  for (uint32_t pages : {1u, 2u, 3u}) {
    serve(kQuiet, std::span<const TokenId>(chain).first(pages * kPageTokens + 1));
  }
  REQUIRE(runtime.tree().stats().nodes == 4);
  // One node at a time (a batch would drop its first pages up front rather than demote them).
  CHECK(runtime.evict(1) == 1);  // the grandchild to the host
  CHECK(runtime.evict(1) == 1);  // the child: the host is full, both tenants at their min
  REQUIRE(runtime.tree().host_cached_pages() == 4);
  CHECK(runtime.evict(1) == 1);  // the top node's page: dropped, with everything below it
  runtime.check_accounting();    // verify(): the namespace counters against the tree
  CHECK(runtime.tree().stats().nodes == 1);
  CHECK(runtime.tree().host_cached_pages() == 2);
  CHECK(runtime.tree().namespace_host_pages(kQuiet) == 0);
  CHECK(runtime.tree().namespace_host_pages(kNoisy) == 2);
  CHECK(runtime.tree().namespace_pages(kQuiet) == 0);
  CHECK(runtime.tree().stats().dropped_pages == 3);  // the top page and the two below it
}
