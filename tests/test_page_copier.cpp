// The PageCopier contract (kv_store/page_copier.h), one body for every implementation: instant
// (a pool without bytes), host (memcpy) and cuda (device <-> pinned host, skipped, saying why,
// when no CUDA device answers). Every byte of both pools is checked against a host model.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kv_store/cuda_backend.h"
#include "kv_store/page_copier.h"
#include "kv_store/page_pool.h"
#include "tests/page_bytes.h"
#include "tests/skip.h"

using namespace radixkv;
using radixkv::testing::Bytes;
using radixkv::testing::random_bytes;

namespace {

// The three copiers make_page_copier chooses, by the backends of the two pools.
struct InstantKind {
  static constexpr std::string_view kCopier = "instant";
  static constexpr bool kMovesBytes = false;
  static std::string unavailable() { return {}; }
  // A pool without bytes over one with them: the host pool's bytes must survive every copy.
  static std::unique_ptr<PageBackend> device_backend() { return make_accounting_backend(); }
  static std::unique_ptr<PageBackend> host_backend() { return make_host_backend(); }
};
struct HostKind {
  static constexpr std::string_view kCopier = "host";
  static constexpr bool kMovesBytes = true;
  static std::string unavailable() { return {}; }
  static std::unique_ptr<PageBackend> device_backend() { return make_host_backend(); }
  static std::unique_ptr<PageBackend> host_backend() { return make_host_backend(); }
};
struct CudaKind {
  static constexpr std::string_view kCopier = "cuda";
  static constexpr bool kMovesBytes = true;
  static std::string unavailable() {
    const CudaProbe probe = probe_cuda();
    return probe.available ? std::string() : probe.reason;
  }
  static std::unique_ptr<PageBackend> device_backend() { return make_cuda_backend(); }
  static std::unique_ptr<PageBackend> host_backend() { return make_pinned_host_backend(); }
};

// A page's bytes, whichever memory the pool keeps them in.
void write_page(PagePool& pool, PageId page, const Bytes& bytes) {
  if (pool.backend().storage() == StorageKind::kHost) {
    std::memcpy(pool.host_bytes(page).data(), bytes.data(), bytes.size());
    return;
  }
#if defined(RADIXKV_HAVE_CUDA)
  dynamic_cast<CudaBackend&>(pool.backend()).write_page(page, bytes);
#endif
}
Bytes read_page(PagePool& pool, PageId page) {
  Bytes bytes(pool.bytes_per_page());
  if (pool.backend().storage() == StorageKind::kHost) {
    std::memcpy(bytes.data(), pool.host_bytes(page).data(), bytes.size());
    return bytes;
  }
#if defined(RADIXKV_HAVE_CUDA)
  dynamic_cast<CudaBackend&>(pool.backend()).read_page(page, bytes);
#endif
  return bytes;
}

// A device pool and a host pool, every page held and filled with random bytes, a model of what
// each page must hold (none for a pool without bytes), and the copier make_page_copier picks.
struct Tiers {
  template <typename Kind>
  Tiers(Kind, const KvLayout& layout, uint64_t seed)
      : rng(seed),
        device(std::make_unique<PagePool>(layout, kDevicePages, Kind::device_backend())),
        host(std::make_unique<PagePool>(layout, kHostPages, Kind::host_backend())),
        moves_bytes(Kind::kMovesBytes) {
    for (PagePool* pool : {device.get(), host.get()}) {
      std::vector<PageId> pages;
      REQUIRE(pool->allocate(pool->capacity_pages(), pages));
      std::vector<Bytes>& model = model_of(*pool);
      if (pool->backend().storage() == StorageKind::kNone) continue;
      for (PageId p = 0; p < pool->capacity_pages(); ++p) {
        model.push_back(random_bytes(rng, layout.bytes_per_page()));
        write_page(*pool, p, model.back());
      }
    }
    copier = make_page_copier(*device, *host);
  }

  std::vector<Bytes>& model_of(const PagePool& pool) {
    return &pool == device.get() ? device_model : host_model;
  }
  // What a batch does to the models (when it is applied, in issue order).
  void apply(const PagePool& from, const PagePool& to, std::span<const PageTransfer> batch) {
    std::vector<Bytes>& src = model_of(from);
    std::vector<Bytes>& dst = model_of(to);
    if (!moves_bytes || src.empty() || dst.empty()) return;
    for (const PageTransfer& t : batch) dst[t.dst] = src[t.src];
  }
  // Every byte of every page against the model.
  void check_bytes() {
    for (PagePool* pool : {device.get(), host.get()}) {
      const std::vector<Bytes>& model = model_of(*pool);
      for (PageId p = 0; p < model.size(); ++p) {
        const std::string tier = pool == device.get() ? "device" : "host";
        CAPTURE(tier);
        CAPTURE(p);
        CHECK(read_page(*pool, p) == model[p]);
      }
    }
  }

  // A valid random batch from `from` to `to`: distinct destinations, some of them runs of
  // consecutive pages on both sides; within one pool no source is also a destination.
  std::vector<PageTransfer> random_batch(const PagePool& from, const PagePool& to) {
    const bool one_pool = &from == &to;
    std::vector<PageId> dsts(to.capacity_pages());
    std::iota(dsts.begin(), dsts.end(), 0);
    std::vector<PageTransfer> batch;
    if (rng() % 3 == 0) {  // one run: consecutive sources to consecutive destinations
      const uint32_t count = 1 + rng() % 6;
      const PageId dst = rng() % (to.capacity_pages() / 2 - count);
      const PageId src = one_pool ? dst + to.capacity_pages() / 2 : rng() % (kDevicePages - count);
      for (uint32_t k = 0; k < count; ++k) batch.push_back({src + k, dst + k});
      return batch;
    }
    std::shuffle(dsts.begin(), dsts.end(), rng);
    const size_t count = 1 + rng() % 10;
    dsts.resize(count);
    std::vector<PageId> srcs;
    for (PageId p = 0; p < from.capacity_pages(); ++p) {
      if (!one_pool || std::find(dsts.begin(), dsts.end(), p) == dsts.end()) srcs.push_back(p);
    }
    for (PageId dst : dsts) batch.push_back({srcs[rng() % srcs.size()], dst});  // repeats allowed
    return batch;
  }

  static constexpr uint32_t kDevicePages = 24;
  static constexpr uint32_t kHostPages = 32;
  std::mt19937_64 rng;
  std::unique_ptr<PagePool> device;
  std::unique_ptr<PagePool> host;
  bool moves_bytes;
  std::vector<Bytes> device_model;
  std::vector<Bytes> host_model;
  std::unique_ptr<PageCopier> copier;
};

// Page sizes that are a multiple of 16 bytes and one that is not (30 bytes).
const KvLayout kLayouts[] = {KvLayout{2, 2, 8, 2, 4}, KvLayout{1, 1, 3, 1, 5}};

}  // namespace

TYPE_TO_STRING(InstantKind);
TYPE_TO_STRING(HostKind);
TYPE_TO_STRING(CudaKind);

// Leaves the test case, reported skipped (tests/skip.h), when the copier cannot run here.
#define SKIP_UNLESS_AVAILABLE(Kind)                                \
  if (const std::string why = Kind::unavailable(); !why.empty()) { \
    RADIXKV_SKIP(Kind::kCopier << " copier unavailable: " << why); \
  }

TEST_CASE_TEMPLATE(
    "random batches both ways, issued without waiting, leave every byte as a model "
    "says",
    Kind, InstantKind, HostKind, CudaKind) {
  SKIP_UNLESS_AVAILABLE(Kind);
  for (const KvLayout& layout : kLayouts) {
    CAPTURE(layout.to_string());
    Tiers t(Kind{}, layout, 20260918 + layout.bytes_per_page());
    CHECK(t.copier->name() == Kind::kCopier);
    CopyTicket last = 0;
    for (int batch = 0; batch < 60; ++batch) {
      // Down, up, and within each pool; later batches read what earlier ones wrote.
      PagePool& from = (batch % 4 == 0 || batch % 4 == 2) ? *t.device : *t.host;
      PagePool& to = (batch % 4 == 0 || batch % 4 == 3) ? *t.host : *t.device;
      const std::vector<PageTransfer> pages = t.random_batch(from, to);
      const CopyTicket ticket = t.copier->copy(from, to, pages);
      CHECK(ticket == last + 1);
      last = ticket;
      t.apply(from, to, pages);
    }
    t.copier->wait(last);
    for (CopyTicket ticket = 1; ticket <= last; ++ticket) CHECK(t.copier->done(ticket));
    t.check_bytes();
  }
}

TEST_CASE_TEMPLATE("a copier within one pool copies its pages onto others of it (partial reuse)",
                   Kind, InstantKind, HostKind, CudaKind) {
  SKIP_UNLESS_AVAILABLE(Kind);
  const KvLayout& layout = kLayouts[0];
  PagePool pool(layout, 6, Kind::device_backend());
  const std::unique_ptr<PageCopier> copier = make_page_copier(pool);
  CHECK(copier->name() == Kind::kCopier);
  std::vector<PageId> pages;
  REQUIRE(pool.allocate(6, pages));
  std::mt19937_64 rng(20261202);
  std::vector<Bytes> written;
  for (PageId page : pages) {
    written.push_back(random_bytes(rng, pool.bytes_per_page()));
    if (Kind::kMovesBytes) write_page(pool, page, written.back());
  }
  // Pages 0 and 1 onto 4 and 5, then (a later ticket) 4 onto 2: it reads what the first wrote.
  const std::vector<PageTransfer> first = {{pages[0], pages[4]}, {pages[1], pages[5]}};
  const PageTransfer second{pages[4], pages[2]};
  CHECK(copier->copy(pool, pool, first) == 1);
  const CopyTicket last = copier->copy(pool, pool, {&second, 1});
  CHECK(last == 2);
  copier->wait(last);
  CHECK(copier->done(1));
  if (Kind::kMovesBytes) {
    const std::vector<Bytes> expected = {written[0], written[1], written[0],
                                         written[3], written[0], written[1]};
    for (std::size_t i = 0; i < pages.size(); ++i) {
      CAPTURE(i);
      CHECK(read_page(pool, pages[i]) == expected[i]);
    }
  }
  // A page read and written in one batch would race: refused, as for two pools.
  const std::vector<PageTransfer> racing = {{pages[0], pages[1]}, {pages[1], pages[2]}};
  CHECK_THROWS_AS(copier->copy(pool, pool, racing), std::invalid_argument);
  pool.release(pages);
}

TEST_CASE_TEMPLATE("a copy issued later reads what an earlier one wrote", Kind, InstantKind,
                   HostKind, CudaKind) {
  SKIP_UNLESS_AVAILABLE(Kind);
  Tiers t(Kind{}, kLayouts[0], 5);
  // Device 3 -> host 7 -> device 9 -> host 11, three tickets, one wait for the last.
  const PageTransfer down[] = {{3, 7}}, up[] = {{7, 9}}, down_again[] = {{9, 11}};
  t.copier->copy(*t.device, *t.host, down);
  t.apply(*t.device, *t.host, down);
  t.copier->copy(*t.host, *t.device, up);
  t.apply(*t.host, *t.device, up);
  const CopyTicket last = t.copier->copy(*t.device, *t.host, down_again);
  t.apply(*t.device, *t.host, down_again);
  t.copier->wait(last);
  t.check_bytes();
  if (Kind::kMovesBytes) CHECK(read_page(*t.host, 11) == read_page(*t.device, 3));
}

TEST_CASE_TEMPLATE("tickets count up from 1, complete in issue order, and 0 is nothing to wait for",
                   Kind, InstantKind, HostKind, CudaKind) {
  SKIP_UNLESS_AVAILABLE(Kind);
  Tiers t(Kind{}, kLayouts[0], 17);
  PageCopier& copier = *t.copier;
  CHECK(copier.copy(*t.device, *t.host, {}) == 0);  // an empty batch
  const PageTransfer onto_itself[] = {{4, 4}, {5, 5}};
  CHECK(copier.copy(*t.host, *t.host, onto_itself) == 0);  // nothing that changes a byte
  CHECK(copier.done(0));
  copier.wait(0);

  // Many batches in flight at once (a whole pool each way), then poll without blocking.
  std::vector<PageTransfer> all_down, all_up;
  for (PageId p = 0; p < Tiers::kDevicePages; ++p) {
    all_down.push_back({p, p + 4});
    all_up.push_back({p + 8, p});
  }
  constexpr CopyTicket kBatches = 40;
  for (CopyTicket expect = 1; expect <= kBatches; ++expect) {
    const bool down = expect % 2 == 1;
    PagePool& from = down ? *t.device : *t.host;
    PagePool& to = down ? *t.host : *t.device;
    CHECK(copier.copy(from, to, down ? all_down : all_up) == expect);
    t.apply(from, to, down ? all_down : all_up);
  }
  // done() answers by issue order: once a ticket is done, so is every earlier one. Checked from
  // the newest down, so a ticket finishing during the sweep cannot fake a gap.
  for (int sweep = 0; sweep < 1000 && !copier.done(kBatches); ++sweep) {
    bool seen_done = false;
    for (CopyTicket ticket = kBatches; ticket >= 1; --ticket) {
      const bool done = copier.done(ticket);
      if (seen_done) CHECK(done);
      seen_done = seen_done || done;
    }
  }
  copier.wait(kBatches / 2);
  for (CopyTicket ticket = 1; ticket <= kBatches / 2; ++ticket) CHECK(copier.done(ticket));
  copier.wait(kBatches);
  copier.wait(kBatches);  // again: nothing left to wait for
  CHECK(copier.done(kBatches));
  t.check_bytes();

  CHECK_THROWS_WITH_AS(copier.done(kBatches + 1),
                       doctest::Contains("ticket 41 was never issued by this"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(copier.wait(kBatches + 1), doctest::Contains("the latest is 40"),
                       std::invalid_argument);
}

TEST_CASE_TEMPLATE("a bad batch is refused whole, before anything moves, and uses no ticket", Kind,
                   InstantKind, HostKind, CudaKind) {
  SKIP_UNLESS_AVAILABLE(Kind);
  Tiers t(Kind{}, kLayouts[0], 29);
  PagePool& device = *t.device;
  PagePool& host = *t.host;
  PageCopier& copier = *t.copier;
  const PageTransfer first[] = {{1, 2}};
  REQUIRE(copier.copy(device, host, first) == 1);
  t.apply(device, host, first);

  struct Refusal {
    const char* what;
    PagePool* from;
    PagePool* to;
    std::vector<PageTransfer> pages;
    const char* message;
  };
  PagePool stranger(kLayouts[0], 40, make_host_backend());
  std::vector<PageId> held;
  REQUIRE(stranger.allocate(40, held));
  // Each batch starts with good transfers, so a copier that moved pages before checking them
  // all would be caught by the byte check below.
  const std::vector<Refusal> refusals = {
      {"source page outside its pool",
       &device,
       &host,
       {{0, 0}, {24, 1}},
       "transfer 1 (page 24 -> page 1) reads page 24, outside the source pool of 24 pages"},
      {"destination page outside its pool",
       &host,
       &device,
       {{0, 0}, {1, 24}},
       "writes page 24, outside the destination pool of 24 pages"},
      {"destination written twice",
       &device,
       &host,
       {{0, 5}, {1, 6}, {2, 5}},
       "transfers 0 and 2 both write page 5 of the destination pool"},
      {"page read and written in one pool",
       &host,
       &host,
       {{0, 1}, {1, 2}},
       "page 1 is both read (transfer 1) and written (transfer 0)"},
      {"a pool the copier was not made for",
       &stranger,
       &host,
       {{0, 1}},
       "the source pool is neither the device pool nor the host pool"},
      {"a pool the copier was not made for, as destination",
       &device,
       &stranger,
       {{0, 1}},
       "the destination pool is neither"},
  };
  for (const Refusal& r : refusals) {
    CAPTURE(r.what);
    CHECK_THROWS_WITH_AS(copier.copy(*r.from, *r.to, r.pages), doctest::Contains(r.message),
                         std::invalid_argument);
  }
  // A page nobody holds.
  host.release(30);
  const PageTransfer to_free[] = {{0, 3}, {0, 30}};
  CHECK_THROWS_WITH_AS(copier.copy(device, host, to_free),
                       doctest::Contains("writes page 30, free (refcount 0) in the destination"),
                       std::invalid_argument);
  const PageTransfer from_free[] = {{30, 0}};
  CHECK_THROWS_WITH_AS(copier.copy(host, device, from_free),
                       doctest::Contains("reads page 30, free (refcount 0) in the source pool"),
                       std::invalid_argument);

  std::vector<PageId> again;  // held again, so that its bytes can be read back
  REQUIRE(host.allocate(1, again));
  REQUIRE(again[0] == 30);

  // No ticket was used, and no byte moved.
  const PageTransfer next[] = {{6, 9}};
  CHECK(copier.copy(host, device, next) == 2);
  t.apply(host, device, next);
  copier.wait(2);
  t.check_bytes();
}

TEST_CASE("make_page_copier picks the copier from the backends and refuses pairs none serves") {
  const KvLayout layout = kLayouts[0];
  auto pool = [&](std::unique_ptr<PageBackend> backend) {
    return std::make_unique<PagePool>(layout, 4, std::move(backend));
  };
  const auto accounting = pool(make_accounting_backend());
  const auto accounting2 = pool(make_accounting_backend());
  const auto host = pool(make_host_backend());
  const auto host2 = pool(make_host_backend());
  CHECK(make_page_copier(*accounting, *accounting2)->name() == "instant");
  CHECK(make_page_copier(*accounting, *host)->name() == "instant");
  CHECK(make_page_copier(*host, *accounting)->name() == "instant");
  CHECK(make_page_copier(*host, *host2)->name() == "host");

  CHECK_THROWS_WITH_AS(make_page_copier(*host, *host), doctest::Contains("are the same pool"),
                       std::invalid_argument);
  PagePool bigger(KvLayout{2, 2, 8, 2, 8}, 4, make_host_backend());
  CHECK_THROWS_WITH_AS(make_page_copier(*host, bigger),
                       doctest::Contains("the device pool's pages hold 512 bytes"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(make_page_copier(*accounting, bigger),
                       doctest::Contains("the host pool's 1024 bytes"), std::invalid_argument);

  // A backend that claims device memory but is not the CUDA backend: no copier moves its pages.
  struct ForeignDevice final : PageBackend {
    std::string_view name() const override { return "foreign-device"; }
    StorageKind storage() const override { return StorageKind::kDevice; }
    void reserve(uint32_t, uint64_t) override {}
    void* page_address(PageId) const override { return nullptr; }
    void copy_page(PageId, PageId) override {}
  };
  const auto foreign = pool(std::make_unique<ForeignDevice>());
  CHECK_THROWS_WITH_AS(make_page_copier(*host, *foreign),
                       doctest::Contains("the host pool's backend 'foreign-device' keeps its "
                                         "pages on a device"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(make_page_copier(*foreign, *host),
                       doctest::Contains("backend 'foreign-device'"), std::invalid_argument);
  CHECK(make_page_copier(*foreign, *accounting)->name() == "instant");
}

TEST_CASE("checked_transfers keeps every real copy and drops only a page copied onto itself") {
  PagePool a(kLayouts[0], 8, make_host_backend());
  PagePool b(kLayouts[0], 8, make_host_backend());
  std::vector<PageId> held;
  REQUIRE(a.allocate(8, held));
  REQUIRE(b.allocate(8, held));
  const std::vector<PageTransfer> batch = {{3, 3}, {1, 2}, {1, 5}};
  // Between two pools page 3 -> page 3 is a real copy.
  CHECK(checked_transfers(a, b, batch).size() == 3);
  const std::vector<PageTransfer> within = checked_transfers(a, a, batch);
  REQUIRE(within.size() == 2);
  CHECK((within[0].src == 1 && within[0].dst == 2 && within[1].dst == 5));

  PagePool other_size(kLayouts[1], 8, make_host_backend());
  REQUIRE(other_size.allocate(8, held));
  CHECK_THROWS_WITH_AS(checked_transfers(a, other_size, batch),
                       doctest::Contains("the source pool's pages hold 512 bytes"),
                       std::invalid_argument);
}

TEST_CASE("transfer_runs splits a batch into maximal runs that rebuild it") {
  const std::vector<PageTransfer> example = {
      {7, 2}, {8, 3}, {9, 4}, {1, 5}, {2, 7}, {kInvalidPage - 1, 0}, {kInvalidPage, 1}, {0, 2}};
  const std::vector<TransferRun> runs = transfer_runs(example);
  REQUIRE(runs.size() == 5);
  CHECK((runs[0].src == 7 && runs[0].dst == 2 && runs[0].count == 3));
  CHECK((runs[1].src == 1 && runs[1].dst == 5 && runs[1].count == 1));  // src continues, dst not
  CHECK((runs[2].src == 2 && runs[2].dst == 7 && runs[2].count == 1));
  CHECK((runs[3].src == kInvalidPage - 1 && runs[3].count == 2));
  CHECK((runs[4].src == 0 && runs[4].dst == 2 && runs[4].count == 1));  // no wrap to page 0
  CHECK(transfer_runs({}).empty());

  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<PageTransfer> batch;
    while (batch.size() < 40) {  // stretches that continue on one side, both, or neither
      const PageId src = rng() % 64, dst = rng() % 64;
      const uint32_t n = 1 + rng() % 5;
      const bool src_steps = rng() % 4 != 0, dst_steps = rng() % 4 != 0;
      for (uint32_t k = 0; k < n; ++k) batch.push_back({src + k * src_steps, dst + k * dst_steps});
    }
    const std::vector<TransferRun> got = transfer_runs(batch);
    std::vector<PageTransfer> rebuilt;
    for (size_t r = 0; r < got.size(); ++r) {
      REQUIRE(got[r].count >= 1);
      for (uint32_t k = 0; k < got[r].count; ++k) {
        rebuilt.push_back({got[r].src + k, got[r].dst + k});
      }
      if (r + 1 < got.size()) {  // maximal: the next run does not continue this one
        CHECK_FALSE((got[r + 1].src == got[r].src + got[r].count &&
                     got[r + 1].dst == got[r].dst + got[r].count));
      }
    }
    REQUIRE(rebuilt.size() == batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      CHECK((rebuilt[i].src == batch[i].src && rebuilt[i].dst == batch[i].dst));
    }
  }
}

TEST_CASE("without a device the pinned host backend refuses, saying why") {
  const CudaProbe probe = probe_cuda();
  if (probe.available) {
    RADIXKV_SKIP("a CUDA device answers (" << probe.device_name << "): no refusal to check");
  }
  REQUIRE_FALSE(probe.reason.empty());
  CHECK_THROWS_WITH_AS(
      make_pinned_host_backend(),
      doctest::Contains(("cannot make the pinned host backend: " + probe.reason).c_str()),
      std::runtime_error);
}

TEST_CASE("a CUDA device pool needs a pinned host pool under it") {
  if (const CudaProbe probe = probe_cuda(); !probe.available) RADIXKV_SKIP(probe.reason);
  PagePool device(kLayouts[0], 4, make_cuda_backend());
  PagePool pageable(kLayouts[0], 4, make_host_backend());
  CHECK_THROWS_WITH_AS(make_page_copier(device, pageable),
                       doctest::Contains("the host pool's backend 'host' is not pinned"),
                       std::invalid_argument);
  PagePool pinned(kLayouts[0], 4, make_pinned_host_backend());
  CHECK(make_page_copier(device, pinned)->name() == "cuda");
  // A pinned host pool under a host pool is host memory on both sides: plain memcpy.
  CHECK(make_page_copier(pageable, pinned)->name() == "host");
  CHECK_THROWS_WITH_AS(make_page_copier(pinned, device),
                       doctest::Contains("the host pool's backend 'cuda' keeps its pages on a "
                                         "device"),
                       std::invalid_argument);
}
