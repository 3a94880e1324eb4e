// radixkv_gpu_check: checks, then times, the CUDA page backend and the tier copier against plain
// cudaMemcpy.
//
//   radixkv_gpu_check [--arena-mib N] [--reps N]
//
// Backend: for each page size it fills an arena of random bytes, runs every method once and
// compares every byte of the result with a host model; only then does it time the method (--reps
// back-to-back runs between two events). A batch is half the arena's pages, in random order.
// Tier copier: gpu_check_copier.cpp. Exits 1 at the first wrong byte, 2 when there is no device
// or an argument is bad. scripts/gpu-check.sh runs it.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kv_store/cuda_backend.h"
#include "kv_store/kv_layout.h"
#include "scripts/gpu_check.h"

using namespace radixkv;
using namespace radixkv::gpu_check;

namespace {

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--arena-mib" || arg == "--reps") && i + 1 < argc) {
      const std::string text = argv[++i];
      size_t used = 0;
      long value = 0;
      try {
        value = std::stol(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || value < 1 || value > (1 << 20)) {
        throw std::invalid_argument(
            fmt::format("{} wants a whole number from 1 to {}, got '{}'", arg, 1 << 20, text));
      }
      if (arg == "--arena-mib") options.arena_mib = static_cast<uint64_t>(value);
      if (arg == "--reps") options.reps = static_cast<int>(value);
    } else {
      throw std::invalid_argument(
          fmt::format("unknown or incomplete argument '{}'; usage: radixkv_gpu_check [--arena-mib "
                      "N] [--reps N]",
                      arg));
    }
  }
  return options;
}

struct Row {
  std::string operation;
  std::string method;
  double gbps;
};

// One page size: an arena on the device, its host model, and a batch of pages in random order.
class Bench {
 public:
  Bench(uint64_t page_bytes, const Options& options) : page_bytes_(page_bytes), options_(options) {
    pages_ = static_cast<uint32_t>(options.arena_mib * (1ull << 20) / page_bytes);
    if (pages_ < 2) throw std::invalid_argument("--arena-mib is too small for two pages");
    batch_ = pages_ / 2;
    backend_.reserve(pages_, page_bytes);
    model_.resize(uint64_t{pages_} * page_bytes);
    readback_.resize(model_.size());
    buffer_ = PinnedHostBuffer(batch_bytes());
    expected_.resize(batch_bytes());
    std::vector<PageId> order(pages_);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(page_bytes);
    std::shuffle(order.begin(), order.end(), rng);
    first_half_.assign(order.begin(), order.begin() + batch_);
    second_half_.assign(order.begin() + batch_, order.begin() + 2 * batch_);
    for (uint32_t i = 0; i < batch_; ++i) copies_.push_back({first_half_[i], second_half_[i]});
  }

  std::vector<Row> run() {
    std::vector<Row> rows;
    const cudaStream_t s = stream_.get();
    std::byte* arena = static_cast<std::byte*>(backend_.page_address(0));
    const uint64_t half = batch_bytes();

    // Page copies inside the device.
    rows.push_back(
        device_copy("copy_pages kernel, one launch", [&] { backend_.copy_pages(copies_, s); }));
    rows.push_back(device_copy("cudaMemcpyAsync per page", [&] {
      for (const PageCopy& c : copies_) {
        RADIXKV_CUDA_CHECK(
            cudaMemcpyAsync(page(c.dst), page(c.src), page_bytes_, cudaMemcpyDeviceToDevice, s));
      }
    }));
    rows.push_back(contiguous(
        "page copy D2D", "one cudaMemcpyAsync, contiguous",
        [&] {
          RADIXKV_CUDA_CHECK(
              cudaMemcpyAsync(arena, arena + half, half, cudaMemcpyDeviceToDevice, s));
        },
        [&] { std::memcpy(model_.data(), model_.data() + half, half); }));

    // Device pages to pinned host memory.
    rows.push_back(gather("gather, copy engine", TransferPath::kCopyEngine));
    rows.push_back(gather("gather, kernel (zero-copy)", TransferPath::kKernel));
    rows.push_back(contiguous(
        "D2H to pinned", "one cudaMemcpyAsync, contiguous",
        [&] {
          RADIXKV_CUDA_CHECK(
              cudaMemcpyAsync(buffer_.data(), arena, half, cudaMemcpyDeviceToHost, s));
        },
        {}, /*check_buffer=*/true));

    // Pinned host memory to device pages.
    rows.push_back(scatter("scatter, copy engine", TransferPath::kCopyEngine));
    rows.push_back(scatter("scatter, kernel (zero-copy)", TransferPath::kKernel));
    rows.push_back(contiguous(
        "H2D from pinned", "one cudaMemcpyAsync, contiguous",
        [&] {
          RADIXKV_CUDA_CHECK(
              cudaMemcpyAsync(arena, buffer_.data(), half, cudaMemcpyHostToDevice, s));
        },
        [&] { std::memcpy(model_.data(), buffer_.data(), half); }));
    return rows;
  }

  uint32_t pages() const { return pages_; }
  uint32_t batch() const { return batch_; }

 private:
  uint64_t batch_bytes() const { return uint64_t{batch_} * page_bytes_; }
  std::byte* page(PageId p) { return static_cast<std::byte*>(backend_.page_address(p)); }
  std::byte* model_page(PageId p) { return model_.data() + uint64_t{p} * page_bytes_; }

  // New random contents in the arena and its model, so a method that does nothing cannot pass.
  // Everything runs on stream_, a non-blocking stream: plain cudaMemcpy (legacy default stream)
  // would not be ordered with it, and returns from pageable H2D copies before the DMA is done.
  void reset_arena() {
    fill_random(model_.data(), model_.size(), ++seed_);
    RADIXKV_CUDA_CHECK(cudaMemcpyAsync(page(0), model_.data(), model_.size(),
                                       cudaMemcpyHostToDevice, stream_.get()));
    RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }
  void check_arena(const std::string& what) {
    RADIXKV_CUDA_CHECK(cudaMemcpyAsync(readback_.data(), page(0), readback_.size(),
                                       cudaMemcpyDeviceToHost, stream_.get()));
    RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    expect_equal(readback_.data(), model_.data(), model_.size(), page_bytes_, what);
  }

  // Runs once unchecked to warm up, then `reps` times between two timing events.
  double time(const std::function<void()>& enqueue) {
    enqueue();
    CudaEvent start(/*timing=*/true), end(/*timing=*/true);
    start.record(stream_.get());
    for (int r = 0; r < options_.reps; ++r) enqueue();
    end.record(stream_.get());
    end.synchronize();
    const double seconds = CudaEvent::elapsed_ms(start, end) / 1e3;
    return double(batch_bytes()) * options_.reps / seconds / 1e9;
  }

  Row device_copy(const std::string& method, const std::function<void()>& enqueue) {
    reset_arena();
    enqueue();
    for (const PageCopy& c : copies_)
      std::memcpy(model_page(c.dst), model_page(c.src), page_bytes_);
    check_arena(method);
    return {"page copy D2D", method, time(enqueue)};
  }

  Row contiguous(const std::string& operation, const std::string& method,
                 const std::function<void()>& enqueue, const std::function<void()>& apply,
                 bool check_buffer = false) {
    reset_arena();
    fill_random(buffer_.data(), buffer_.size(), ++seed_);
    std::memcpy(expected_.data(), model_.data(), expected_.size());  // for D2H: the first half
    enqueue();
    if (apply) apply();
    check_arena(operation + ", " + method);
    if (check_buffer) {
      expect_equal(buffer_.data(), expected_.data(), expected_.size(), page_bytes_,
                   operation + ", " + method);
    }
    return {operation, method, time(enqueue)};
  }

  Row gather(const std::string& method, TransferPath path) {
    reset_arena();
    std::memset(buffer_.data(), 0, buffer_.size());
    for (uint32_t slot = 0; slot < batch_; ++slot) {
      std::memcpy(expected_.data() + uint64_t{slot} * page_bytes_, model_page(first_half_[slot]),
                  page_bytes_);
    }
    auto enqueue = [&] { backend_.gather(first_half_, buffer_, stream_.get(), path); };
    enqueue();
    check_arena(method);  // the pages themselves are untouched
    expect_equal(buffer_.data(), expected_.data(), expected_.size(), page_bytes_, method);
    return {"gather D2H", method, time(enqueue)};
  }

  Row scatter(const std::string& method, TransferPath path) {
    reset_arena();
    fill_random(buffer_.data(), buffer_.size(), ++seed_);
    for (uint32_t slot = 0; slot < batch_; ++slot) {
      std::memcpy(model_page(first_half_[slot]), buffer_.data() + uint64_t{slot} * page_bytes_,
                  page_bytes_);
    }
    auto enqueue = [&] { backend_.scatter(buffer_, first_half_, stream_.get(), path); };
    enqueue();
    check_arena(method);
    return {"scatter H2D", method, time(enqueue)};
  }

  uint64_t page_bytes_;
  Options options_;
  uint32_t pages_ = 0;
  uint32_t batch_ = 0;
  uint64_t seed_ = 0;
  CudaBackend backend_;
  CudaStream stream_;
  std::vector<std::byte> model_;
  std::vector<std::byte> readback_;
  std::vector<std::byte> expected_;
  PinnedHostBuffer buffer_;
  std::vector<PageId> first_half_;
  std::vector<PageId> second_half_;
  std::vector<PageCopy> copies_;
};

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "radixkv_gpu_check: {}\n", e.what());
    return 2;
  }
  const CudaProbe probe = probe_cuda();
  if (!probe.available) {
    fmt::print(stderr, "radixkv_gpu_check: {}\n", probe.reason);
    return 2;
  }
  int runtime = 0, driver = 0;
  RADIXKV_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  RADIXKV_CUDA_CHECK(cudaDriverGetVersion(&driver));

  struct Size {
    const char* what;
    uint64_t bytes;
  };
  const Size sizes[] = {
      {"llama-3-8b, 16 tokens", KvLayout::preset("llama-3-8b", 16).bytes_per_page()},
      {"llama-3-8b, one layer of 16 tokens", KvLayout{1, 8, 128, 2, 16}.bytes_per_page()},
  };
  try {
    CudaBackend probe_backend;
    fmt::print("radixkv gpu check: {} ({} SMs), CUDA runtime {}.{}, driver {}.{}\n",
               probe.device_name, probe_backend.multiprocessor_count(), runtime / 1000,
               runtime % 1000 / 10, driver / 1000, driver % 1000 / 10);
    fmt::print(
        "arena {} MiB per page size; a batch is half its pages, in random order; every "
        "method checked byte for byte, then timed over {} runs\n",
        options.arena_mib, options.reps);
    fmt::print("GB/s = page bytes moved per second (1 GB = 1e9 bytes)\n\n");
    fmt::print("{:<8} {:<16} {:<34} {:>9}\n", "page", "operation", "method", "GB/s");
    for (const Size& size : sizes) {
      Bench bench(size.bytes, options);
      fmt::print("-- {} pages ({}): {} pages in the arena, {} per batch\n", size_label(size.bytes),
                 size.what, bench.pages(), bench.batch());
      for (const Row& row : bench.run()) {
        fmt::print("{:<8} {:<16} {:<34} {:>9.1f}\n", size_label(size.bytes), row.operation,
                   row.method, row.gbps);
      }
    }
    run_copier_check(options);
  } catch (const CheckFailed& e) {
    fmt::print(stderr, "CHECK FAILED: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "radixkv_gpu_check: {}\n", e.what());
    return 2;
  }
  fmt::print("\nall bytes checked: ok\n");
  return 0;
}
