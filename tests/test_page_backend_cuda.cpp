// What only the CUDA backend has: the refusal without a device, error messages, batch planning
// (none of which needs a GPU), and the batch copies, gather and scatter (which do).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kv_store/cuda_backend.h"
#include "kv_store/page_pool.h"
#include "tests/page_bytes.h"
#include "tests/skip.h"

#if defined(RADIXKV_HAVE_CUDA)
#include "kv_store/cuda_page_copy.h"
#endif

using namespace radixkv;
using radixkv::testing::Bytes;
using radixkv::testing::random_bytes;

TEST_CASE("without a device the cuda backend refuses, saying why") {
  const CudaProbe probe = probe_cuda();
  if (probe.available) {
    RADIXKV_SKIP("a CUDA device answers (" << probe.device_name << "): no refusal to check");
  }
  CHECK_FALSE(cuda_device_available());
  CHECK(probe.device_count == 0);
  REQUIRE_FALSE(probe.reason.empty());
  CHECK_THROWS_WITH(make_cuda_backend(), doctest::Contains(probe.reason.c_str()));
  CHECK_THROWS_AS(make_cuda_backend(), std::runtime_error);
  if (!kBuiltWithCuda) CHECK(probe.reason.find("without CUDA") != std::string::npos);
}

#if defined(RADIXKV_HAVE_CUDA)

namespace {

std::string error_of(auto&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// A device backend with a host-side model of every page, for the tests that need a GPU.
struct DevicePages {
  DevicePages(uint32_t pages, uint64_t page_bytes, uint64_t seed) : rng(seed), model(pages) {
    backend.reserve(pages, page_bytes);
    for (PageId p = 0; p < pages; ++p) {
      model[p] = random_bytes(rng, page_bytes);
      backend.write_page(p, model[p]);
    }
  }
  // Every byte of every page against the model.
  void check_all() const {
    Bytes bytes(backend.bytes_per_page());
    for (PageId p = 0; p < model.size(); ++p) {
      backend.read_page(p, bytes);
      CAPTURE(p);
      CHECK(bytes == model[p]);
    }
  }
  std::mt19937_64 rng;
  CudaBackend backend;
  std::vector<Bytes> model;
};

const uint64_t kPageSizes[] = {512, 30};  // a 16-byte multiple (vector path) and an odd size

}  // namespace

// Leaves the test case, reported skipped (tests/skip.h), when no CUDA device answers.
#define SKIP_WITHOUT_DEVICE()                                   \
  if (const CudaProbe probe = probe_cuda(); !probe.available) { \
    RADIXKV_SKIP(probe.reason);                                 \
  }

TEST_CASE("check_cuda names the call, the place and CUDA's own description") {
  CHECK_NOTHROW(check_cuda(cudaSuccess, "cudaFree(p)", "x.cu", 1));
  const cudaError_t code = cudaErrorMemoryAllocation;
  try {
    check_cuda(code, "cudaMalloc(&arena, bytes)", "kv_store/somewhere.cu", 42);
    FAIL("check_cuda did not throw");
  } catch (const CudaError& e) {
    const std::string what = e.what();
    CHECK(e.code() == code);
    CHECK(what.find("cudaMalloc(&arena, bytes)") != std::string::npos);
    CHECK(what.find("kv_store/somewhere.cu:42") != std::string::npos);
    CHECK(what.find(cudaGetErrorString(code)) != std::string::npos);
  }
  const std::string from_macro = error_of([] { RADIXKV_CUDA_CHECK(cudaErrorInvalidValue); });
  CHECK(from_macro.find("cudaErrorInvalidValue") != std::string::npos);
  CHECK(from_macro.find(__FILE__) != std::string::npos);
}

TEST_CASE("consecutive_runs splits a page list into maximal runs that rebuild it") {
  const std::vector<PageId> example = {7, 8, 9, 2, 3, 3, kInvalidPage - 1, kInvalidPage, 0};
  const std::vector<PageRun> runs = consecutive_runs(example);
  REQUIRE(runs.size() == 5);
  CHECK((runs[0].first_page == 7 && runs[0].first_slot == 0 && runs[0].count == 3));
  CHECK((runs[1].first_page == 2 && runs[1].first_slot == 3 && runs[1].count == 2));
  CHECK((runs[2].first_page == 3 && runs[2].first_slot == 5 && runs[2].count == 1));
  CHECK((runs[3].first_page == kInvalidPage - 1 && runs[3].count == 2));
  CHECK((runs[4].first_page == 0 && runs[4].first_slot == 8));
  CHECK(consecutive_runs({}).empty());

  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<PageId> pages;
    while (pages.size() < 40) {  // stretches of consecutive ids, as block tables tend to have
      const PageId start = rng() % 64;
      for (PageId k = 0, n = 1 + rng() % 5; k < n; ++k) pages.push_back(start + k);
    }
    const std::vector<PageRun> got = consecutive_runs(pages);
    std::vector<PageId> rebuilt;
    for (size_t r = 0; r < got.size(); ++r) {
      REQUIRE(got[r].first_slot == rebuilt.size());
      for (uint32_t k = 0; k < got[r].count; ++k) rebuilt.push_back(got[r].first_page + k);
      if (r + 1 < got.size()) {  // maximal: the next run does not continue this one
        CHECK(got[r + 1].first_page != got[r].first_page + got[r].count);
      }
    }
    CHECK(rebuilt == pages);
  }
}

TEST_CASE("checked_page_copies keeps real copies and refuses batches that race or overflow") {
  const std::vector<PageCopy> fine = {{1, 2}, {3, 3}, {4, 2}, {5, 0}};
  const std::vector<PageCopy> work = checked_page_copies(fine, 6);
  REQUIRE(work.size() == 3);  // the copy of page 3 onto itself does nothing
  CHECK((work[0].dst == 1 && work[1].dst == 4 && work[2].dst == 5));

  const std::vector<PageCopy> outside = {{1, 2}, {6, 0}};
  CHECK_THROWS_WITH_AS(checked_page_copies(outside, 6),
                       doctest::Contains("page 6, outside the arena of 6 pages"),
                       std::invalid_argument);
  const std::vector<PageCopy> written_twice = {{1, 2}, {1, 3}};
  CHECK_THROWS_WITH_AS(checked_page_copies(written_twice, 6),
                       doctest::Contains("page 1 is the destination of more than one copy"),
                       std::invalid_argument);
  const std::vector<PageCopy> chained = {{1, 2}, {3, 1}};
  CHECK_THROWS_WITH_AS(checked_page_copies(chained, 6), doctest::Contains("page 1 is both read"),
                       std::invalid_argument);
}

namespace {
// A word that counts the stores into it, to run the kernel's per-thread loop on the host.
struct Tally {
  uint64_t value = 0;
  int stores = 0;
  Tally() = default;
  Tally(const Tally&) = default;
  Tally& operator=(const Tally& other) {
    value = other.value;
    ++stores;
    return *this;
  }
};
}  // namespace

TEST_CASE("the copy kernel's grid and per-thread loop copy every word of a page exactly once") {
  // Word counts around the block size and the unroll, and a 2 MiB page of 16-byte words.
  for (uint64_t words : {1, 3, 7, 255, 256, 257, 1000, 1024, 4097, 131072}) {
    for (uint32_t pages : {1u, 3u, 1000u}) {
      for (int multiprocessors : {1, 132}) {
        CAPTURE(words);
        CAPTURE(pages);
        CAPTURE(multiprocessors);
        const uint32_t chunks = copy_chunks_per_page(pages, words, multiprocessors);
        REQUIRE(chunks >= 1);
        CHECK(chunks <= kMaxCopyChunks);
        CHECK(uint64_t{chunks - 1} * kCopyThreads < words);  // every chunk has work
        const uint64_t useful = (words + kCopyThreads - 1) / kCopyThreads;
        const uint64_t fill = uint64_t(multiprocessors) * kCopyBlocksPerMultiprocessor;
        CHECK(uint64_t{pages} * chunks >= std::min(fill, pages * useful));  // fills the GPU

        std::vector<Tally> src(words), dst(words);
        for (uint64_t i = 0; i < words; ++i) src[i].value = i * 0x9e3779b97f4a7c15ull + 1;
        for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
          for (uint32_t thread = 0; thread < kCopyThreads; ++thread) {
            copy_thread_words(src.data(), dst.data(), words,
                              uint64_t{chunk} * kCopyThreads + thread,
                              uint64_t{kCopyThreads} * chunks);
          }
        }
        uint64_t wrong = 0;
        for (uint64_t i = 0; i < words; ++i) {
          wrong += dst[i].stores != 1 || dst[i].value != src[i].value;
        }
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("copy_pages on a caller's stream matches copying one page at a time") {
  SKIP_WITHOUT_DEVICE();
  for (uint64_t page_bytes : kPageSizes) {
    CAPTURE(page_bytes);
    constexpr uint32_t kPages = 64;
    DevicePages d(kPages, page_bytes, 11 + page_bytes);
    std::vector<PageId> order(kPages);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), d.rng);
    std::vector<PageCopy> batch;  // destinations from the first half, sources from the second
    for (uint32_t i = 0; i < 20; ++i) batch.push_back({order[i], order[32 + i]});
    batch.push_back({order[40], order[40]});
    for (const PageCopy& c : batch) d.model[c.dst] = d.model[c.src];

    CudaStream stream;
    CudaEvent done = d.backend.copy_pages(batch, stream.get());
    done.synchronize();
    CHECK(done.ready());
    d.check_all();

    CudaEvent nothing = d.backend.copy_pages({}, stream.get());  // an empty batch still signals
    nothing.synchronize();
    CHECK(nothing.ready());
  }
}

TEST_CASE("gather and scatter move every byte both ways, on both transfer paths") {
  SKIP_WITHOUT_DEVICE();
  for (uint64_t page_bytes : kPageSizes) {
    for (TransferPath path : {TransferPath::kCopyEngine, TransferPath::kKernel}) {
      CAPTURE(page_bytes);
      CAPTURE(static_cast<int>(path));
      constexpr uint32_t kPages = 48;
      DevicePages d(kPages, page_bytes, 23 + page_bytes);
      // Runs of consecutive pages, a repeated page and scattered ones.
      const std::vector<PageId> gathered = {3, 4, 5, 6, 17, 17, 40, 2, 9, 10, 47, 0};
      PinnedHostBuffer buffer(gathered.size() * page_bytes);
      CudaStream stream;
      d.backend.gather(gathered, buffer, stream.get(), path).synchronize();
      for (size_t slot = 0; slot < gathered.size(); ++slot) {
        CAPTURE(slot);
        CHECK(std::memcmp(buffer.data() + slot * page_bytes, d.model[gathered[slot]].data(),
                          page_bytes) == 0);
      }

      const std::vector<PageId> scattered = {30, 31, 32, 1, 8, 44, 45, 12};
      for (size_t slot = 0; slot < scattered.size(); ++slot) {
        d.model[scattered[slot]] = random_bytes(d.rng, page_bytes);
        std::memcpy(buffer.data() + slot * page_bytes, d.model[scattered[slot]].data(), page_bytes);
      }
      CudaEvent done = d.backend.scatter(buffer, scattered, stream.get(), path);
      // A second stream ordered after the scatter by its event sees the new bytes.
      CudaStream reader;
      done.make_stream_wait(reader.get());
      PinnedHostBuffer back(scattered.size() * page_bytes);
      d.backend.gather(scattered, back, reader.get(), path).synchronize();
      CHECK(std::memcmp(back.data(), buffer.data(), back.size()) == 0);
      d.check_all();
    }
  }
}

TEST_CASE("bad input to the cuda backend is refused before anything moves") {
  SKIP_WITHOUT_DEVICE();
  CHECK_THROWS_WITH_AS(CudaBackend(1 << 20), doctest::Contains("does not exist"),
                       std::invalid_argument);
  CudaBackend unreserved;
  CHECK_THROWS_WITH_AS(unreserved.page_address(0), doctest::Contains("before reserve"),
                       std::logic_error);

  DevicePages d(8, 64, 5);
  CHECK_THROWS_AS(d.backend.reserve(8, 64), std::logic_error);
  CHECK_THROWS_WITH_AS(d.backend.page_address(8), doctest::Contains("outside the arena of 8 pages"),
                       std::invalid_argument);
  CHECK_THROWS_AS(d.backend.copy_page(0, 8), std::invalid_argument);
  Bytes short_page(63);
  CHECK_THROWS_WITH_AS(d.backend.write_page(0, short_page), doctest::Contains("63 bytes"),
                       std::invalid_argument);

  CudaStream stream;
  const std::vector<PageCopy> racing = {{1, 2}, {2, 3}};
  CHECK_THROWS_AS(d.backend.copy_pages(racing, stream.get()), std::invalid_argument);
  const std::vector<PageCopy> outside = {{1, 2}, {3, 99}};
  CHECK_THROWS_AS(d.backend.copy_pages(outside, stream.get()), std::invalid_argument);

  PinnedHostBuffer two_pages(2 * 64);
  const std::vector<PageId> three = {0, 1, 2};
  CHECK_THROWS_WITH_AS(d.backend.gather(three, two_pages, stream.get()),
                       doctest::Contains("holds 2 pages of 64 bytes, the list has 3"),
                       std::invalid_argument);
  std::memset(two_pages.data(), 0xab, two_pages.size());
  const std::vector<PageId> twice = {5, 5};
  CHECK_THROWS_WITH_AS(d.backend.scatter(two_pages, twice, stream.get()),
                       doctest::Contains("page 5 appears more than once"), std::invalid_argument);
  stream.synchronize();
  d.check_all();  // nothing above changed a byte
}

#endif  // RADIXKV_HAVE_CUDA
