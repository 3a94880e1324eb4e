// Remote pages through a host tier (runtime/remote_staging.h): the remote tier checks them into
// staging pages of the host pool and the host tier's copier moves them to the device, with the
// ticket admit returns. Over host-memory pools with a copier that defers its copies (so the pages
// in flight can be looked at), an in-memory store, and, when a CUDA device answers, a GPU device
// pool over pinned host pages. Also the refusals: a device pool on a GPU without a host tier,
// and write-through over one (a backend that says its pages are on a GPU stands in for CUDA, so
// these run everywhere).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kv_store/cuda_backend.h"
#include "kv_store/page_copier.h"
#include "kv_store/page_pool.h"
#include "radix/page_hash.h"
#include "remote/page_value.h"
#include "remote/remote_tier.h"
#include "runtime/prefix_cache_runtime.h"
#include "tests/cache_fixture.h"
#include "tests/memory_store.h"
#include "tests/skip.h"
#include "tests/small_traces.h"
#include "tests/test_copier.h"
#include "tools/replay/engine_replay.h"

namespace radixkv {
namespace {

using testing::iota_tokens;
using testing::MemoryStore;
using testing::TestCopier;

constexpr uint32_t P = 4;
const KvLayout kLayout{1, 1, 4, 2, P};

remote::RemoteTierConfig tier_config(bool write_through = false) {
  remote::RemoteTierConfig config{"t", kLayout, "m", 0, 1u << 12, 64};
  config.write_through = write_through;
  return config;
}

std::unique_ptr<remote::RemoteTier> make_tier(MemoryStore::Shared& shared,
                                              const remote::RemoteTierConfig& config) {
  return std::make_unique<remote::RemoteTier>(std::make_unique<MemoryStore>(shared),
                                              std::make_unique<MemoryStore>(shared), config);
}
std::unique_ptr<remote::RemoteTier> make_tier(MemoryStore::Shared& shared,
                                              bool write_through = false) {
  return make_tier(shared, tier_config(write_through));
}

// What the "model" computed for page i of `tokens` in namespace ns: bytes that depend on the
// page's whole prefix (its chain hash), so one prefix has one content wherever it is computed.
std::vector<std::byte> page_content(Namespace ns, const std::vector<TokenId>& tokens, uint32_t i) {
  std::vector<PageHash> hashes;
  chain_page_hashes(ns, tokens, P, i, 1, hashes);
  std::vector<std::byte> bytes(kLayout.bytes_per_page());
  for (size_t b = 0; b < bytes.size(); ++b) {
    bytes[b] = static_cast<std::byte>((hashes[0].low >> (8 * (b % 8))) + b / 8);
  }
  return bytes;
}

// Puts pages [0, pages) of `tokens` (namespace ns) in the store as another server would have.
void store_pages(MemoryStore::Shared& shared, Namespace ns, const std::vector<TokenId>& tokens,
                 uint32_t pages) {
  const uint64_t layout = remote::layout_id(kLayout, "m");
  std::vector<PageHash> hashes;
  PageHash parent = chain_page_hashes(ns, tokens, P, 0, pages, hashes);
  std::lock_guard lock(shared.mutex);
  for (uint32_t i = 0; i < pages; ++i) {
    const std::vector<std::byte> bytes = page_content(ns, tokens, i);
    shared.values[remote::page_key("t", layout, hashes[i])] = remote::encode_page_value(
        layout, parent, std::span(tokens).subspan(size_t{i} * P, P), bytes);
    parent = hashes[i];
  }
}

bool holds_content(PagePool& pool, PageId page, Namespace ns, const std::vector<TokenId>& tokens,
                   uint32_t i) {
  const std::vector<std::byte> want = page_content(ns, tokens, i);
  return std::memcmp(pool.host_bytes(page).data(), want.data(), want.size()) == 0;
}

// A runtime over host-memory pools with a host tier whose copier defers copies until told, and a
// remote tier over an in-memory store.
struct StagedRuntime {
  explicit StagedRuntime(uint32_t device_pages = 32, uint32_t host_pages = 16, bool deferred = true,
                         const remote::RemoteTierConfig& config = tier_config())
      : pool(kLayout, device_pages, make_host_backend()),
        host(kLayout, host_pages, make_host_backend()),
        copier(deferred),
        tier(make_tier(shared, config)),
        runtime(pool, {0, 1.0, 1.0}, tiers()) {}

  TierConfig tiers() {
    TierConfig c;
    c.host.pool = &host;
    c.host.copier = &copier;
    c.remote = tier.get();
    return c;
  }

  // Puts the first `pages` pages of `prompt` in the store and admits it: they arrive from there.
  AdmitResult admit_from_store(uint64_t id, const std::vector<TokenId>& prompt, uint32_t pages) {
    store_pages(shared, 0, prompt, pages);
    const AdmitResult r = runtime.admit({id, 0, prompt});
    REQUIRE(r.ok());
    REQUIRE(r.remote_hit_tokens == pages * P);
    return r;
  }

  MemoryStore::Shared shared;
  PagePool pool;
  PagePool host;
  TestCopier copier;
  std::unique_ptr<remote::RemoteTier> tier;
  PrefixCacheRuntime runtime;
};

TEST_CASE("remote through the host tier: pages arrive by the copier, with admit's ticket") {
  StagedRuntime f;
  const std::vector<TokenId> prompt = iota_tokens(5 * P + 1, 100);  // the cut is 5 pages
  store_pages(f.shared, 0, prompt, 4);

  const AdmitResult r = f.runtime.admit({1, 0, prompt});
  REQUIRE(r.ok());
  CHECK(r.remote_hit_tokens == 4 * P);
  CHECK(r.reused_tokens == 4 * P);
  CHECK(r.position_offset == 4 * P);
  REQUIRE(r.load_ticket != 0);
  CHECK(f.runtime.view(r.seq).load_ticket == r.load_ticket);
  CHECK_FALSE(f.runtime.load_done(r.load_ticket));
  // Four staging pages held while the copy runs (the fifth page was a miss: given back at once).
  CHECK(f.host.free_pages() == 16 - 4);
  CHECK(f.copier.pending() == 1);
  f.runtime.check_accounting();
  for (uint32_t i = 0; i < 4; ++i)
    CHECK_FALSE(holds_content(f.pool, r.block_table[i], 0, prompt, i));

  f.runtime.wait_load(r.load_ticket);
  CHECK(f.runtime.load_done(r.load_ticket));
  for (uint32_t i = 0; i < 4; ++i) CHECK(holds_content(f.pool, r.block_table[i], 0, prompt, i));
  CHECK(f.host.free_pages() == 16);          // staging pages back once the ticket is done
  CHECK(f.runtime.check_accounting() == 2);  // the private pages: page 4 and the last token's
  CHECK(f.runtime.stats().remote_hit_tokens == 4 * P);
  CHECK(f.runtime.stats().remote_no_staging == 0);
  CHECK(f.tier->stats().loaded_pages == 4);
  f.runtime.finish(r.seq);
}

TEST_CASE("remote through the host tier: a device hit on pages still loading waits for them") {
  StagedRuntime f;
  const std::vector<TokenId> prompt = iota_tokens(4 * P + 1, 7);
  const AdmitResult a = f.admit_from_store(1, prompt, 4);
  REQUIRE_FALSE(f.runtime.load_done(a.load_ticket));
  // Another request over the same prefix finds the pages on the device, in the trie already, but
  // still being written: its ticket covers that copy.
  std::vector<TokenId> other(prompt.begin(), prompt.begin() + 2 * P);
  for (TokenId t : iota_tokens(P + 1, 9000)) other.push_back(t);
  const AdmitResult b = f.runtime.admit({2, 0, other});
  REQUIRE(b.ok());
  CHECK(b.device_hit_tokens == 2 * P);
  CHECK(b.remote_hit_tokens == 0);
  CHECK(b.load_ticket >= a.load_ticket);
  CHECK_FALSE(f.runtime.load_done(b.load_ticket));
  f.copier.complete_next();
  CHECK(f.runtime.load_done(b.load_ticket));
  // Once done, a third one waits for nothing.
  const AdmitResult c = f.runtime.admit({3, 0, other});
  REQUIRE(c.ok());
  CHECK(c.load_ticket == 0);
  for (SeqHandle seq : {a.seq, b.seq, c.seq}) f.runtime.finish(seq);
  f.runtime.check_accounting();
}

TEST_CASE("remote through the host tier: a commit switching to pages still loading waits") {
  StagedRuntime f;
  const std::vector<TokenId> prompt = iota_tokens(3 * P + 1, 40);
  // B computes the same pages while A's remote load of them is still in flight.
  const AdmitResult b = f.runtime.admit({2, 0, prompt});
  REQUIRE(b.ok());
  REQUIRE(b.reused_tokens == 0);
  const AdmitResult a = f.admit_from_store(1, prompt, 3);
  REQUIRE_FALSE(f.runtime.load_done(a.load_ticket));
  const CommitResult committed = f.runtime.commit(b.seq, 3 * P);
  CHECK(committed.duplicate_pages == 3);
  // B's block table now names A's pages: the commit waited for their bytes.
  CHECK(f.copier.pending() == 0);
  const SequenceView view = f.runtime.view(b.seq);
  for (uint32_t i = 0; i < 3; ++i) {
    CHECK(view.block_table[i] == a.block_table[i]);
    CHECK(holds_content(f.pool, view.block_table[i], 0, prompt, i));
  }
  f.runtime.finish(a.seq);
  f.runtime.finish(b.seq);
  f.runtime.check_accounting();
}

TEST_CASE("remote through the host tier: a sequence ended before its load leaks nothing") {
  for (const bool finish : {false, true}) {
    CAPTURE(finish);
    StagedRuntime f;
    const std::vector<TokenId> prompt = iota_tokens(4 * P + 1, 300);
    const AdmitResult r = f.admit_from_store(1, prompt, 4);
    const std::vector<PageId> loading(r.block_table.begin(), r.block_table.begin() + 4);
    if (finish) {
      f.runtime.finish(r.seq);
    } else {
      f.runtime.abort(r.seq);
    }
    // The trie lets the pages go; the copy still writes them, so they stay held, as do the
    // staging pages it reads (the copier fails a copy whose pages nobody holds).
    f.runtime.clear_cache();
    CHECK(f.runtime.cached_pages() == 0);
    for (PageId page : loading) CHECK(f.pool.refcount(page) == 1);
    CHECK(f.pool.free_pages() == 32 - 4);
    CHECK(f.host.free_pages() == 16 - 4);
    f.runtime.check_accounting();  // capacity == free + cached + private + loading
    // Nothing allocated meanwhile gets one of them.
    const AdmitResult other = f.runtime.admit({2, 0, iota_tokens(28 * P, 5000)});
    REQUIRE(other.ok());
    for (PageId page : other.block_table) {
      CHECK(std::find(loading.begin(), loading.end(), page) == loading.end());
    }
    f.runtime.abort(other.seq);
    REQUIRE(f.copier.complete_next());
    CHECK(f.runtime.load_done(r.load_ticket));
    CHECK(f.pool.free_pages() == 32);
    CHECK(f.host.free_pages() == 16);
    f.runtime.check_accounting();
  }
}

// The tree tells the remote tier about a page (inserted() under write-through, dropping() on
// its way out) while the page must hold its bytes (radix/tier_events.h); a page a remote load
// still writes does not yet, so the call waits for that copy. Without the wait the tier would
// write the page's old bytes back under its key, over the good value (write-through that does not
// remember loaded pages makes inserted() write them again).
TEST_CASE("remote through the host tier: a page still loading is written only once it arrives") {
  remote::RemoteTierConfig config = tier_config(/*write_through=*/true);
  config.known_pages = 0;
  StagedRuntime f(32, 16, /*deferred=*/true, config);

  const std::vector<TokenId> prompt = iota_tokens(3 * P + 1, 800);
  store_pages(f.shared, 0, prompt, 3);
  const std::map<std::string, std::string> stored = [&] {
    std::lock_guard lock(f.shared.mutex);
    return f.shared.values;
  }();
  const AdmitResult r = f.runtime.admit({1, 0, prompt});
  REQUIRE(r.ok());
  REQUIRE(r.remote_hit_tokens == 3 * P);
  CHECK(f.copier.pending() == 0);  // inserting the pages waited for their copy
  for (uint32_t i = 0; i < 3; ++i) CHECK(holds_content(f.pool, r.block_table[i], 0, prompt, i));
  f.tier->drain();
  CHECK(f.tier->stats().queued_pages == 3);  // written again (nothing remembered), with their bytes
  {
    std::lock_guard lock(f.shared.mutex);
    for (const auto& [key, value] : stored) CHECK(f.shared.values.at(key) == value);
  }
  f.runtime.finish(r.seq);
  f.runtime.check_accounting();
}

TEST_CASE("remote through the host tier: no host page to stage in is a miss, counted") {
  StagedRuntime f(32, 8, /*deferred=*/false);
  const std::vector<TokenId> prompt = iota_tokens(4 * P + 1, 60);
  store_pages(f.shared, 0, prompt, 4);
  // Someone else holds every host page: nothing free, nothing the host could evict.
  std::vector<PageId> held;
  REQUIRE(f.host.allocate(8, held));
  const AdmitResult r = f.runtime.admit({1, 0, prompt});
  REQUIRE(r.ok());
  CHECK(r.remote_hit_tokens == 0);
  CHECK(r.reused_tokens == 0);
  CHECK(r.load_ticket == 0);
  CHECK(f.runtime.stats().remote_no_staging == 1);
  CHECK(f.tier->stats().lookups == 0);  // the store was not even asked
  f.runtime.abort(r.seq);
  // Two pages free: the run is cut to two, counted again.
  f.host.release(std::span<const PageId>(held).first(2));
  const AdmitResult two = f.runtime.admit({2, 0, prompt});
  REQUIRE(two.ok());
  CHECK(two.remote_hit_tokens == 2 * P);
  CHECK(f.runtime.stats().remote_no_staging == 2);
  for (uint32_t i = 0; i < 2; ++i) CHECK(holds_content(f.pool, two.block_table[i], 0, prompt, i));
  f.runtime.abort(two.seq);
  f.host.release(std::span<const PageId>(held).subspan(2));
  f.runtime.check_accounting();
  // With room, the rest arrives.
  const AdmitResult all = f.runtime.admit({3, 0, prompt});
  REQUIRE(all.ok());
  CHECK(all.device_hit_tokens == 2 * P);
  CHECK(all.remote_hit_tokens == 2 * P);
  CHECK(f.runtime.stats().remote_no_staging == 2);
  f.runtime.finish(all.seq);
  f.runtime.check_accounting();
}

TEST_CASE("remote through the host tier: a full host evicts by its policy to stage pages") {
  StagedRuntime f(32, 4, /*deferred=*/false);
  // Fill the host with four cached pages (write-back: the device evicts them to the host).
  const std::vector<TokenId> first = iota_tokens(4 * P + 1, 1);
  const AdmitResult a = f.runtime.admit({1, 0, first});
  REQUIRE(a.ok());
  f.runtime.commit(a.seq, 4 * P);
  f.runtime.finish(a.seq);
  REQUIRE(f.runtime.evict(4) == 4);
  REQUIRE(f.runtime.tree().host_cached_pages() == 4);
  REQUIRE(f.host.free_pages() == 0);
  const std::vector<TokenId> second = iota_tokens(3 * P + 1, 900);
  store_pages(f.shared, 0, second, 3);
  const AdmitResult r = f.runtime.admit({3, 0, second});
  REQUIRE(r.ok());
  CHECK(r.remote_hit_tokens == 3 * P);
  CHECK(f.runtime.stats().remote_no_staging == 0);
  CHECK(f.runtime.tree().host_cached_pages() == 1);  // three made room
  for (uint32_t i = 0; i < 3; ++i) CHECK(holds_content(f.pool, r.block_table[i], 0, second, i));
  f.runtime.finish(r.seq);
  f.runtime.check_accounting();
}

// An engine replay of `trace` over the store behind `shared`, with a host tier of 64 pages.
tools::ReplayResult staged_engine_replay(const tools::Trace& trace, MemoryStore::Shared& shared,
                                         uint32_t pool_pages, double h2d_gbps = 50) {
  remote::RemoteTier tier(std::make_unique<MemoryStore>(shared),
                          std::make_unique<MemoryStore>(shared), tier_config());
  tools::EngineReplayConfig config;
  config.layout = kLayout;
  config.model = tier.config().model;
  config.pool_pages = pool_pages;
  config.host.capacity_pages = 64;
  config.host.h2d_gbps = h2d_gbps;
  config.compare_no_cache = false;
  config.remote = &tier;
  tools::ReplayResult r = tools::replay_engine(trace, config);
  tier.drain();
  return r;
}

TEST_CASE("remote through the host tier: two engine replays share pages, none leaked") {
  tools::GenConfig gen = testing::small_gen_config(5);
  gen.conversations = 60;
  const tools::Trace trace = testing::generated_trace(gen);
  MemoryStore::Shared shared;
  const tools::ReplayResult a = staged_engine_replay(trace, shared, 256);
  CHECK(a.ok());
  CHECK(a.pages_leaked == 0);
  CHECK(a.accounting_error.empty());
  const tools::ReplayResult b = staged_engine_replay(trace, shared, 256);  // cold local tiers
  CHECK(b.ok());
  CHECK(b.pages_leaked == 0);
  CHECK(b.accounting_error.empty());
  CHECK(b.remote.hit_tokens > a.remote.hit_tokens);
  CHECK(b.remote.hit_tokens > 0);
}

// Remote pages reach the device by the host tier's H2D copy (staging), so an engine replay prices
// them on the H2D engine as it does host hits: slower copies, later first tokens.
TEST_CASE("remote through the host tier: an engine replay prices the staged pages' copies") {
  tools::GenConfig gen = testing::small_gen_config(11);
  gen.conversations = 40;
  const tools::Trace trace = testing::generated_trace(gen);
  MemoryStore::Shared shared;
  staged_engine_replay(trace, shared,
                       128);  // a small pool: pages pass through the host to the store
  REQUIRE(!shared.values.empty());
  // A pool that never evicts: no host hits, so every H2D copy is a staged remote page.
  const tools::ReplayResult fast = staged_engine_replay(trace, shared, 1 << 14, 1000);
  const tools::ReplayResult slow =
      staged_engine_replay(trace, shared, 1 << 14, 1e-6);  // 1,000 bytes a second
  REQUIRE(fast.ok());
  REQUIRE(slow.ok());
  REQUIRE(fast.remote.hit_tokens > 0);
  REQUIRE(slow.remote.hit_tokens > 0);  // more than fast's: requests waiting longer share less
  REQUIRE(fast.host.host_hit_tokens == 0);
  REQUIRE(slow.host.host_hit_tokens == 0);
  // At least one request waited for one page more: bytes_per_page / 1,000 s, spread over all.
  const double one_page_s = static_cast<double>(kLayout.bytes_per_page()) / 1000.0;
  CHECK(slow.engine.run.ttft_mean_s - fast.engine.run.ttft_mean_s >
        one_page_s / static_cast<double>(slow.engine.run.finished));
}

// A backend that says its pages are on a GPU (for the refusals; it keeps no bytes).
class GpuLikeBackend final : public PageBackend {
 public:
  std::string_view name() const override { return "gpu-like"; }
  StorageKind storage() const override { return StorageKind::kDevice; }
  void reserve(uint32_t, uint64_t) override {}
  void* page_address(PageId) const override { return nullptr; }
  void copy_page(PageId, PageId) override {}
};

TEST_CASE("remote over a device pool on a GPU: refused without a host tier, naming what to add") {
  MemoryStore::Shared shared;
  const std::unique_ptr<remote::RemoteTier> tier = make_tier(shared);
  PagePool pool(kLayout, 8, std::make_unique<GpuLikeBackend>());
  TierConfig tiers;
  tiers.remote = tier.get();
  CHECK_THROWS_WITH_AS(PrefixCacheRuntime(pool, {}, tiers),
                       doctest::Contains("without a host tier to stage them through: add one "
                                         "(TierConfig::host.pool"),
                       std::invalid_argument);
  // Nothing was claimed: the pool takes a runtime without the remote tier.
  PrefixCacheRuntime plain(pool);
  CHECK(plain.pool().free_pages() == 8);
}

TEST_CASE("remote over a device pool on a GPU: write-through refused, and device drops not sent") {
  MemoryStore::Shared shared;
  PagePool device(kLayout, 8, std::make_unique<GpuLikeBackend>());
  PagePool host(kLayout, 8, make_host_backend());
  {
    // At the runtime's construction, with a host tier to stage loads through.
    const std::unique_ptr<remote::RemoteTier> through = make_tier(shared, /*write_through=*/true);
    TestCopier copier;
    TierConfig tiers;
    tiers.host.pool = &host;
    tiers.host.copier = &copier;
    tiers.remote = through.get();
    CHECK_THROWS_WITH_AS(PrefixCacheRuntime(device, {}, tiers),
                         doctest::Contains("write-through writes a page when it is cached"),
                         std::invalid_argument);
    tiers.remote = nullptr;
    PrefixCacheRuntime without_remote(device, {}, tiers);  // nothing was left claimed
  }
  CHECK_THROWS_WITH_AS(make_tier(shared)->attach_pools(&host, &device),
                       doctest::Contains("host tier's pages are on a GPU"), std::invalid_argument);
  // Write-back: a device page that leaves the trie is not written (its bytes cannot be read),
  // counted; a host page is.
  const std::unique_ptr<remote::RemoteTier> tier = make_tier(shared);
  tier->attach_pools(&device, &host);
  std::vector<PageId> d, h;
  REQUIRE(device.allocate(1, d));
  REQUIRE(host.allocate(1, h));
  const std::vector<TokenId> page = iota_tokens(P, 3);
  const PageHash seed = namespace_seed(0);
  const PageHash first = chain_page_hash(seed, page);
  tier->dropping({Tier::kDevice, first, seed, page, d[0]});
  tier->dropping({Tier::kHost, chain_page_hash(first, page), first, page, h[0]});
  tier->drain();
  CHECK(tier->stats().dropped_writes == 1);
  CHECK(tier->stats().stored_pages == 1);
  CHECK(shared.values.size() == 1);
  device.release(d);
  host.release(h);
}

TEST_CASE("remote into a CUDA device pool through pinned host pages: the bytes arrive") {
  if (const CudaProbe probe = probe_cuda(); !probe.available) RADIXKV_SKIP(probe.reason);
  MemoryStore::Shared shared;
  const std::unique_ptr<remote::RemoteTier> tier = make_tier(shared);
  PagePool device(kLayout, 16, make_cuda_backend());
  PagePool host(kLayout, 8, make_pinned_host_backend());
  TierConfig tiers;
  tiers.host.pool = &host;  // the runtime makes the CUDA copier
  tiers.remote = tier.get();
  PrefixCacheRuntime runtime(device, {0, 1.0, 1.0}, tiers);
  const std::vector<TokenId> prompt = iota_tokens(3 * P + 1, 77);
  store_pages(shared, 0, prompt, 3);
  const AdmitResult r = runtime.admit({1, 0, prompt});
  REQUIRE(r.ok());
  CHECK(r.remote_hit_tokens == 3 * P);
  REQUIRE(r.load_ticket != 0);
  runtime.wait_load(r.load_ticket);
  CHECK(host.free_pages() == 8);
  runtime.check_accounting();
  // Read the device pages back through a copier of their own into pinned pages.
  PagePool readback(kLayout, 3, make_pinned_host_backend());
  const std::unique_ptr<PageCopier> copier = make_page_copier(device, readback);
  CHECK(copier->name() == "cuda");
  std::vector<PageId> pages;
  REQUIRE(readback.allocate(3, pages));
  std::vector<PageTransfer> transfers;
  for (uint32_t i = 0; i < 3; ++i) transfers.push_back({r.block_table[i], pages[i]});
  copier->wait(copier->copy(device, readback, transfers));
  for (uint32_t i = 0; i < 3; ++i) CHECK(holds_content(readback, pages[i], 0, prompt, i));
  readback.release(pages);
  runtime.finish(r.seq);
  runtime.check_accounting();
}

}  // namespace
}  // namespace radixkv
