// The PageBackend interface tests: one body for every backend that keeps bytes. The host backend
// always runs; the CUDA and pinned host backends run when a device answers and are skipped,
// saying why, otherwise.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kv_store/cuda_backend.h"
#include "kv_store/page_pool.h"
#include "tests/page_bytes.h"
#include "tests/skip.h"

using namespace radixkv;
using radixkv::testing::Bytes;
using radixkv::testing::random_bytes;

namespace {

// How a test reaches a backend's bytes: plain memory for the host, cudaMemcpy for the device.
struct HostKind {
  static constexpr StorageKind kStorage = StorageKind::kHost;
  static constexpr std::string_view kName = "host";
  static std::string unavailable() { return {}; }
  static std::unique_ptr<PageBackend> make() { return make_host_backend(); }
  static void write(PageBackend& backend, PageId page, const Bytes& bytes) {
    std::memcpy(backend.page_address(page), bytes.data(), bytes.size());
  }
  static Bytes read(PageBackend& backend, PageId page, uint64_t bytes_per_page) {
    Bytes bytes(bytes_per_page);
    std::memcpy(bytes.data(), backend.page_address(page), bytes.size());
    return bytes;
  }
};

// Pinned host memory: read and written like the host backend's, but it needs a CUDA device.
struct PinnedHostKind {
  static constexpr StorageKind kStorage = StorageKind::kHost;
  static constexpr std::string_view kName = "pinned-host";
  static std::string unavailable() {
    const CudaProbe probe = probe_cuda();
    return probe.available ? std::string() : probe.reason;
  }
  static std::unique_ptr<PageBackend> make() { return make_pinned_host_backend(); }
  static void write(PageBackend& backend, PageId page, const Bytes& bytes) {
    HostKind::write(backend, page, bytes);
  }
  static Bytes read(PageBackend& backend, PageId page, uint64_t bytes_per_page) {
    return HostKind::read(backend, page, bytes_per_page);
  }
};

struct CudaKind {
  static constexpr StorageKind kStorage = StorageKind::kDevice;
  static constexpr std::string_view kName = "cuda";
  static std::string unavailable() {
    const CudaProbe probe = probe_cuda();
    return probe.available ? std::string() : probe.reason;
  }
  static std::unique_ptr<PageBackend> make() { return make_cuda_backend(); }
#if defined(RADIXKV_HAVE_CUDA)
  static void write(PageBackend& backend, PageId page, const Bytes& bytes) {
    dynamic_cast<CudaBackend&>(backend).write_page(page, bytes);
  }
  static Bytes read(PageBackend& backend, PageId page, uint64_t bytes_per_page) {
    Bytes bytes(bytes_per_page);
    dynamic_cast<CudaBackend&>(backend).read_page(page, bytes);
    return bytes;
  }
#else  // never called: unavailable() is never empty without CUDA
  static void write(PageBackend&, PageId, const Bytes&) {}
  static Bytes read(PageBackend&, PageId, uint64_t) { return {}; }
#endif
};

// Page sizes that are a multiple of 16 bytes (vector copies on the device) and one that is not.
const KvLayout kLayouts[] = {KvLayout{2, 2, 8, 2, 4}, KvLayout{1, 1, 3, 1, 5}};

}  // namespace

TYPE_TO_STRING(HostKind);
TYPE_TO_STRING(PinnedHostKind);
TYPE_TO_STRING(CudaKind);

// Leaves the test case, reported skipped (tests/skip.h), when the backend cannot run here.
#define SKIP_UNLESS_AVAILABLE(Kind)                                \
  if (const std::string why = Kind::unavailable(); !why.empty()) { \
    RADIXKV_SKIP(Kind::kName << " backend unavailable: " << why);  \
  }

TEST_CASE_TEMPLATE("a backend names itself and spaces its pages one page apart", Kind, HostKind,
                   PinnedHostKind, CudaKind) {
  SKIP_UNLESS_AVAILABLE(Kind);
  for (const KvLayout& layout : kLayouts) {
    CAPTURE(layout.to_string());
    PagePool pool(layout, 6, Kind::make());
    CHECK(pool.backend().name() == Kind::kName);
    CHECK(pool.backend().storage() == Kind::kStorage);
    const auto first = reinterpret_cast<uintptr_t>(pool.backend().page_address(0));
    CHECK(first != 0);
    for (PageId p = 1; p < 6; ++p) {
      CHECK(reinterpret_cast<uintptr_t>(pool.backend().page_address(p)) ==
            first + p * layout.bytes_per_page());
    }
  }
}

TEST_CASE_TEMPLATE("fresh pages read back as zeros", Kind, HostKind, PinnedHostKind, CudaKind) {
  SKIP_UNLESS_AVAILABLE(Kind);
  const KvLayout layout = kLayouts[0];
  PagePool pool(layout, 4, Kind::make());
  const Bytes zeros(layout.bytes_per_page());
  for (PageId p = 0; p < 4; ++p)
    CHECK(Kind::read(pool.backend(), p, layout.bytes_per_page()) == zeros);
}

TEST_CASE_TEMPLATE("every byte written to a page reads back, and copy_page copies one whole page",
                   Kind, HostKind, PinnedHostKind, CudaKind) {
  SKIP_UNLESS_AVAILABLE(Kind);
  std::mt19937_64 rng(20260917);
  for (const KvLayout& layout : kLayouts) {
    CAPTURE(layout.to_string());
    constexpr uint32_t kPages = 12;
    const uint64_t page_bytes = layout.bytes_per_page();
    PagePool pool(layout, kPages, Kind::make());
    std::vector<PageId> pages;
    REQUIRE(pool.allocate(kPages, pages));

    std::vector<Bytes> model(kPages);  // the oracle: what each page must hold
    for (PageId p : pages) {
      model[p] = random_bytes(rng, page_bytes);
      Kind::write(pool.backend(), p, model[p]);
    }
    // Copy-on-write steps in random order, a page onto itself included.
    for (int step = 0; step < 40; ++step) {
      const PageId dst = pages[rng() % kPages];
      const PageId src = step % 10 == 0 ? dst : pages[rng() % kPages];
      pool.backend().copy_page(dst, src);
      model[dst] = model[src];
    }
    for (PageId p : pages) {
      CAPTURE(p);
      CHECK(Kind::read(pool.backend(), p, page_bytes) == model[p]);
    }
    pool.release(pages);
    CHECK(pool.free_pages() == kPages);
  }
}
