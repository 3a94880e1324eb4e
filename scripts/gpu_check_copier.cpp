// The tier copier part of radixkv_gpu_check: the PageCopier that make_page_copier builds over a
// CUDA device pool and a pinned host pool (kv_store/cuda_page_copier.h).
//
// Check: both pools filled with random bytes, then batches of random pages down (D2H), up (H2D)
// and down and up again, issued without waiting (later batches read what earlier ones wrote),
// one wait for the last ticket, and every byte of both pools compared with a host model.
// Timing: for each direction, batch size and page order, the median over --reps of copy() +
// wait() on the host clock, beside the median of one cudaMemcpyAsync of the same number of
// bytes between the same two arenas (contiguous: the ceiling) + cudaStreamSynchronize.
// `scattered` batches take random pages on both sides (one cudaMemcpyAsync per page);
// `consecutive` ones are a single run (one cudaMemcpyAsync for the batch).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kv_store/cuda_backend.h"
#include "kv_store/kv_layout.h"
#include "kv_store/page_copier.h"
#include "kv_store/page_pool.h"
#include "scripts/gpu_check.h"

namespace radixkv::gpu_check {
namespace {

class CopierBench {
 public:
  CopierBench(const KvLayout& layout, const Options& options)
      : page_bytes_(layout.bytes_per_page()),
        pages_(pages_in(options.arena_mib, page_bytes_)),
        reps_(options.reps),
        device_(layout, pages_, make_cuda_backend()),
        host_(layout, pages_, make_pinned_host_backend()),
        copier_(make_page_copier(device_, host_)),
        rng_(page_bytes_) {
    if (copier_->name() != "cuda") {
      throw CheckFailed(
          fmt::format("make_page_copier chose the '{}' copier for a CUDA device "
                      "pool over a pinned host pool, not 'cuda'",
                      copier_->name()));
    }
    std::vector<PageId> held;
    if (!device_.allocate(pages_, held) || !host_.allocate(pages_, held)) {
      throw std::logic_error("CopierBench: fresh pools should have every page free");
    }
    RADIXKV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~CopierBench() { static_cast<void>(cudaStreamDestroy(stream_)); }
  CopierBench(const CopierBench&) = delete;
  CopierBench& operator=(const CopierBench&) = delete;

  void check() {
    std::vector<std::byte> device_model(arena_bytes()), host_model(arena_bytes());
    fill_random(device_model.data(), device_model.size(), rng_());
    fill_random(host_model.data(), host_model.size(), rng_());
    // On stream_ and synchronised: a plain cudaMemcpy from pageable memory may return before its
    // DMA lands, and the copier's non-blocking stream is not ordered after the default stream.
    RADIXKV_CUDA_CHECK(cudaMemcpyAsync(arena(device_), device_model.data(), arena_bytes(),
                                       cudaMemcpyHostToDevice, stream_));
    RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::memcpy(arena(host_), host_model.data(), arena_bytes());

    CopyTicket last = 0;
    for (int step = 0; step < 4; ++step) {
      const bool down = step % 2 == 0;
      PagePool& from = down ? device_ : host_;
      PagePool& to = down ? host_ : device_;
      const std::vector<PageTransfer> batch = scattered(pages_ / 2);
      last = copier_->copy(from, to, batch);
      const std::vector<std::byte>& src = down ? device_model : host_model;
      std::vector<std::byte>& dst = down ? host_model : device_model;
      for (const PageTransfer& t : batch) {
        std::memcpy(dst.data() + uint64_t{t.dst} * page_bytes_,
                    src.data() + uint64_t{t.src} * page_bytes_, page_bytes_);
      }
    }
    copier_->wait(last);
    if (!copier_->done(last)) throw CheckFailed("done() is false after wait() of the same ticket");
    std::vector<std::byte> readback(arena_bytes());
    RADIXKV_CUDA_CHECK(cudaMemcpyAsync(readback.data(), arena(device_), arena_bytes(),
                                       cudaMemcpyDeviceToHost, stream_));
    RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_));
    expect_equal(readback.data(), device_model.data(), arena_bytes(), page_bytes_,
                 "tier copier, device pool after 4 batches");
    expect_equal(arena(host_), host_model.data(), arena_bytes(), page_bytes_,
                 "tier copier, host pool after 4 batches");
  }

  void time_and_print() {
    for (const bool down : {true, false}) {
      PagePool& from = down ? device_ : host_;
      PagePool& to = down ? host_ : device_;
      for (const uint32_t batch : {1u, 16u, 256u}) {
        if (batch > pages_) continue;
        for (const bool consecutive : {false, true}) {
          const std::vector<PageTransfer> pages = consecutive ? run_of(batch) : scattered(batch);
          const double copier_s =
              median_seconds([&] { copier_->wait(copier_->copy(from, to, pages)); });
          const uint64_t bytes = uint64_t{batch} * page_bytes_;
          const double memcpy_s = median_seconds([&] {
            RADIXKV_CUDA_CHECK(
                cudaMemcpyAsync(arena(to), arena(from), bytes, cudaMemcpyDefault, stream_));
            RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_));
          });
          fmt::print("{:<8} {:<4} {:>6} {:<12} {:>12.1f} {:>16.1f} {:>14.2f}\n",
                     size_label(page_bytes_), down ? "D2H" : "H2D", batch,
                     consecutive ? "consecutive" : "scattered", bytes / copier_s / 1e9,
                     bytes / memcpy_s / 1e9, memcpy_s / copier_s);
        }
      }
    }
  }

 private:
  static uint32_t pages_in(uint64_t arena_mib, uint64_t page_bytes) {
    const uint64_t pages = arena_mib * (1ull << 20) / page_bytes;
    if (pages < 2) {
      throw std::invalid_argument(fmt::format(
          "--arena-mib {} holds fewer than two pages of {} bytes", arena_mib, page_bytes));
    }
    return static_cast<uint32_t>(std::min<uint64_t>(pages, kInvalidPage - 1));
  }
  uint64_t arena_bytes() const { return uint64_t{pages_} * page_bytes_; }
  static std::byte* arena(PagePool& pool) {
    return static_cast<std::byte*>(pool.backend().page_address(0));
  }

  // `count` transfers from random distinct pages to random distinct pages.
  std::vector<PageTransfer> scattered(uint32_t count) {
    std::vector<PageId> src(pages_), dst(pages_);
    std::iota(src.begin(), src.end(), 0);
    std::iota(dst.begin(), dst.end(), 0);
    std::shuffle(src.begin(), src.end(), rng_);
    std::shuffle(dst.begin(), dst.end(), rng_);
    std::vector<PageTransfer> batch;
    for (uint32_t i = 0; i < count; ++i) batch.push_back({src[i], dst[i]});
    return batch;
  }
  std::vector<PageTransfer> run_of(uint32_t count) const {
    std::vector<PageTransfer> batch;
    for (PageId p = 0; p < count; ++p) batch.push_back({p, p});
    return batch;
  }

  // One unmeasured run, then the median of --reps runs on the host clock.
  template <typename Run>
  double median_seconds(Run&& run) {
    run();
    std::vector<double> seconds;
    for (int r = 0; r < reps_; ++r) {
      const auto start = std::chrono::steady_clock::now();
      run();
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return median(seconds);
  }

  uint64_t page_bytes_;
  uint32_t pages_;
  int reps_;
  PagePool device_;
  PagePool host_;
  std::unique_ptr<PageCopier> copier_;
  std::mt19937_64 rng_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

void run_copier_check(const Options& options) {
  const KvLayout layouts[] = {KvLayout::preset("llama-3-8b", 16), KvLayout{1, 8, 128, 2, 16}};
  fmt::print(
      "\ntier copier (make_page_copier: CUDA device pool <-> pinned host pool), {} MiB per pool;\n"
      "checked byte for byte on random pages both ways, then the median of {} runs of copy() + "
      "wait()\nbeside one cudaMemcpyAsync of the same bytes, contiguous, + stream sync\n\n",
      options.arena_mib, options.reps);
  fmt::print("{:<8} {:<4} {:>6} {:<12} {:>12} {:>16} {:>14}\n", "page", "dir", "batch", "pages",
             "copier GB/s", "cudaMemcpy GB/s", "copier/memcpy");
  for (const KvLayout& layout : layouts) {
    CopierBench bench(layout, options);
    bench.check();
    bench.time_and_print();
  }
}

}  // namespace radixkv::gpu_check
