// CudaBackend: KV pages in GPU memory. One cudaMalloc arena split into pages (no managed memory);
// page i starts at arena + i * bytes_per_page.
//
// PinnedHostBackend: host pages in page-locked memory, the host tier under a CUDA device pool
// (its copies: kv_store/cuda_page_copier.h).
//
// This header compiles with or without CUDA. The backends themselves exist only when the build
// found nvcc (RADIXKV_HAVE_CUDA); either way probe_cuda(), cuda_device_available(),
// make_cuda_backend() and make_pinned_host_backend() are here, so a caller can offer
// `--backend cuda` and explain a refusal.
//
// Semantics (the contract of the CUDA part):
//   - copy_page (the PageBackend interface) is synchronous like the host backend's: when it
//     returns, dst holds src's bytes. It is ordered after nothing the caller has in flight on
//     other streams; use copy_pages on the caller's stream for that.
//   - copy_pages, gather and scatter only enqueue work on the stream they are given (standard
//     CUDA meaning: nullptr is the legacy default stream) and return an event that fires when
//     the work is done. Until then the caller must leave the pages involved and the pinned
//     buffer alone (or order its own stream after the event with CudaEvent::make_stream_wait).
//   - Bad arguments (a page outside the arena, a buffer too small for the page list, a batch in
//     which one page would be written twice or both written and read) throw
//     std::invalid_argument naming the argument, before anything is enqueued.
//   - Every CUDA call is checked; a failure throws CudaError (a std::runtime_error) naming the
//     call, file:line and cudaGetErrorString. Destructors never throw (they ignore errors).
//   - Not thread-safe, like PagePool. Each call makes the backend's device current for its
//     duration and restores the caller's device afterwards.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kv_store/page_backend.h"

#if defined(RADIXKV_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace radixkv {

// What a caller needs to know before asking for a CUDA backend.
struct CudaProbe {
  bool available = false;  // built with CUDA and at least one device answers
  int device_count = 0;
  std::string reason;       // why not, when !available
  std::string device_name;  // of device 0, when available
};

#if defined(RADIXKV_HAVE_CUDA)

inline constexpr bool kBuiltWithCuda = true;

CudaProbe probe_cuda();
inline bool cuda_device_available() { return probe_cuda().available; }
// Throws CudaError (with probe_cuda().reason) when no device answers, std::invalid_argument for a
// device index that does not exist.
std::unique_ptr<PageBackend> make_cuda_backend(int device = 0);
// Host pages in pinned memory (PinnedHostBackend, below): the host tier under a CUDA device pool.
// Throws CudaError (with probe_cuda().reason) when no device answers.
std::unique_ptr<PageBackend> make_pinned_host_backend();

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// Throws CudaError "CUDA call <call> failed at <file>:<line>: <cudaGetErrorString> (<name>)"
// unless code is cudaSuccess.
void check_cuda(cudaError_t code, const char* call, const char* file, int line);
#define RADIXKV_CUDA_CHECK(call) ::radixkv::check_cuda((call), #call, __FILE__, __LINE__)

// Makes `device` current for a scope and puts the caller's device back afterwards.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int device_;
  int previous_ = 0;
};

// A CUDA event, created without timing unless asked (cheaper to record and wait on).
class CudaEvent {
 public:
  explicit CudaEvent(bool timing = false);
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  void record(cudaStream_t stream);
  void synchronize() const;                          // blocks the host until the event fired
  bool ready() const;                                // has it fired (never blocks)
  void make_stream_wait(cudaStream_t stream) const;  // later work on `stream` waits for it
  cudaEvent_t handle() const { return event_; }
  // Milliseconds between two fired timing events.
  static float elapsed_ms(const CudaEvent& start, const CudaEvent& end);

 private:
  cudaEvent_t event_ = nullptr;
};

// A non-blocking stream (does not synchronize with the legacy default stream).
class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

// Page-locked host memory for a host tier: cudaHostAlloc with the portable and mapped flags, so
// copy engines reach it at full speed and kernels can read and write it directly.
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  explicit PinnedHostBuffer(uint64_t bytes);
  ~PinnedHostBuffer();
  PinnedHostBuffer(PinnedHostBuffer&& other) noexcept;
  PinnedHostBuffer& operator=(PinnedHostBuffer&& other) noexcept;
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

  std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

// PinnedHostBackend: host pages in one page-locked arena (a PinnedHostBuffer), zeroed at
// reserve() like the host backend's. Its storage is host memory (kHost: tests and tools read the
// bytes directly, and the host copier can memcpy them); being pinned, a CUDA device pool's copies
// to and from it run on the copy engines, asynchronously (CudaPageCopier). Not thread-safe.
class PinnedHostBackend final : public PageBackend {
 public:
  // Throws CudaError when no device answers (cudaHostAlloc needs one).
  PinnedHostBackend();

  std::string_view name() const override { return "pinned-host"; }
  StorageKind storage() const override { return StorageKind::kHost; }
  // Throws CudaError naming the size when the memory cannot be pinned; called once.
  void reserve(uint32_t pages, uint64_t bytes_per_page) override;
  void* page_address(PageId page) const override;
  void copy_page(PageId dst, PageId src) override;

 private:
  PinnedHostBuffer arena_;
  uint64_t bytes_per_page_ = 0;
};

// One page copy of a batch: dst receives src's bytes.
struct PageCopy {
  PageId dst;
  PageId src;
};

// A run of consecutive page ids that moves as one contiguous copy: pages
// [first_page, first_page + count) go to buffer slots [first_slot, first_slot + count).
struct PageRun {
  PageId first_page;
  uint32_t first_slot;
  uint32_t count;
};

// Splits a page list into maximal runs of consecutive ids, in order: 7,8,9,2 -> {7,0,3},{2,3,1}.
std::vector<PageRun> consecutive_runs(std::span<const PageId> pages);

// The copies of a batch that do work (dst != src), after checking that every page is below
// page_count, no page is written twice and no page is both written and read (a single launch
// does them in no particular order). Throws std::invalid_argument naming the offending copy.
std::vector<PageCopy> checked_page_copies(std::span<const PageCopy> copies, uint32_t page_count);

// How gather and scatter move bytes between device pages and pinned host memory.
enum class TransferPath {
  kCopyEngine,  // one cudaMemcpyAsync per run of consecutive pages (DMA, no SMs used)
  kKernel,      // one kernel launch reading/writing the mapped pinned buffer (zero-copy)
};

class CudaBackend final : public PageBackend {
 public:
  // Throws CudaError when no device answers, std::invalid_argument for a device that does not
  // exist. The arena is allocated by reserve().
  explicit CudaBackend(int device = 0);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  StorageKind storage() const override { return StorageKind::kDevice; }
  // One cudaMalloc of pages * bytes_per_page, zeroed. Called once; throws CudaError naming the
  // size when the device does not have it.
  void reserve(uint32_t pages, uint64_t bytes_per_page) override;
  // A device pointer.
  void* page_address(PageId page) const override;
  void copy_page(PageId dst, PageId src) override;

  // All of these are enqueued on `stream`; see the header comment for the contract.
  // copy_pages: one kernel launch for the whole batch (16-byte words when the page size allows).
  CudaEvent copy_pages(std::span<const PageCopy> copies, cudaStream_t stream);
  // gather: pages[i] -> buffer bytes [i * bytes_per_page, (i + 1) * bytes_per_page).
  CudaEvent gather(std::span<const PageId> pages, const PinnedHostBuffer& buffer,
                   cudaStream_t stream, TransferPath path = TransferPath::kCopyEngine);
  // scatter: the reverse of gather; the pages must be distinct.
  CudaEvent scatter(const PinnedHostBuffer& buffer, std::span<const PageId> pages,
                    cudaStream_t stream, TransferPath path = TransferPath::kCopyEngine);

  // Synchronous whole-page access from pageable host memory (tests, tools); `bytes` must be
  // exactly one page.
  void write_page(PageId page, std::span<const std::byte> bytes);
  void read_page(PageId page, std::span<std::byte> bytes) const;

  int device() const { return device_; }
  uint32_t page_count() const { return pages_; }
  uint64_t bytes_per_page() const { return bytes_per_page_; }
  int multiprocessor_count() const { return sm_count_; }

 private:
  void check_page(PageId page, const char* what) const;
  void check_buffer(std::span<const PageId> pages, const PinnedHostBuffer& buffer,
                    const char* what) const;
  CudaEvent transfer(std::span<const PageId> pages, const PinnedHostBuffer& buffer,
                     cudaStream_t stream, TransferPath path, bool to_host);

  int device_ = 0;
  int sm_count_ = 0;
  std::byte* arena_ = nullptr;
  uint32_t pages_ = 0;
  uint64_t bytes_per_page_ = 0;
  cudaStream_t stream_ = nullptr;  // for the synchronous calls
};

#else  // built without CUDA

inline constexpr bool kBuiltWithCuda = false;

inline CudaProbe probe_cuda() {
  CudaProbe probe;
  probe.reason = "radixkv was built without CUDA (nvcc was not found when CMake configured it)";
  return probe;
}
inline bool cuda_device_available() { return false; }
inline std::unique_ptr<PageBackend> make_cuda_backend(int = 0) {
  throw std::runtime_error("cannot make the cuda backend: " + probe_cuda().reason);
}
inline std::unique_ptr<PageBackend> make_pinned_host_backend() {
  throw std::runtime_error("cannot make the pinned host backend: " + probe_cuda().reason);
}

#endif

}  // namespace radixkv
