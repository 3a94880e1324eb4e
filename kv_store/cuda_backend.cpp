#include "kv_store/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "kv_store/cuda_page_copy.h"
#include "kv_store/page_copier.h"

namespace radixkv {
namespace {

std::string describe(cudaError_t code) {
  return fmt::format("{} ({})", cudaGetErrorString(code), cudaGetErrorName(code));
}

// The largest word (1, 2, 4, 8 or 16 bytes) that divides every value: page sizes and addresses.
uint32_t common_alignment(std::initializer_list<uint64_t> values) {
  uint64_t bits = 16;
  for (uint64_t v : values) bits |= v;
  return static_cast<uint32_t>(bits & (~bits + 1));  // lowest set bit
}

// Uploads the address pairs and launches the copy kernel, all in `stream` order: the pair list
// lives in a stream-ordered allocation freed after the kernel, so nothing waits here.
// cudaMemcpyAsync from pageable memory returns once the bytes are staged, so `pairs` may go.
void enqueue_copy_kernel(const std::vector<CopyAddresses>& pairs, uint64_t bytes,
                         uint32_t alignment, int multiprocessors, cudaStream_t stream) {
  if (pairs.empty() || bytes == 0) return;
  const size_t list_bytes = pairs.size() * sizeof(CopyAddresses);
  CopyAddresses* device_pairs = nullptr;
  RADIXKV_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&device_pairs), list_bytes, stream));
  try {
    RADIXKV_CUDA_CHECK(
        cudaMemcpyAsync(device_pairs, pairs.data(), list_bytes, cudaMemcpyHostToDevice, stream));
    launch_copy_kernel(device_pairs, static_cast<uint32_t>(pairs.size()), bytes, alignment,
                       multiprocessors, stream);
  } catch (...) {
    static_cast<void>(cudaFreeAsync(device_pairs, stream));
    throw;
  }
  RADIXKV_CUDA_CHECK(cudaFreeAsync(device_pairs, stream));
}

}  // namespace

void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return;
  // Clear the runtime's last-error slot so a later cudaGetLastError() does not report this again.
  static_cast<void>(cudaGetLastError());
  throw CudaError(
      code, fmt::format("CUDA call {} failed at {}:{}: {}", call, file, line, describe(code)));
}

CudaProbe probe_cuda() {
  CudaProbe probe;
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    probe.reason = "no CUDA device answers: cudaGetDeviceCount failed: " + describe(code);
    return probe;
  }
  probe.device_count = count;
  if (count == 0) {
    probe.reason = "no CUDA device answers: cudaGetDeviceCount found 0 devices";
    return probe;
  }
  cudaDeviceProp properties{};
  const cudaError_t props = cudaGetDeviceProperties(&properties, 0);
  if (props != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    probe.reason =
        "CUDA device 0 does not answer: cudaGetDeviceProperties failed: " + describe(props);
    return probe;
  }
  probe.device_name = properties.name;
  probe.available = true;
  return probe;
}

std::unique_ptr<PageBackend> make_cuda_backend(int device) {
  return std::make_unique<CudaBackend>(device);
}
std::unique_ptr<PageBackend> make_pinned_host_backend() {
  return std::make_unique<PinnedHostBackend>();
}

// ---- RAII wrappers --------------------------------------------------------------------------

CudaDeviceGuard::CudaDeviceGuard(int device) : device_(device) {
  RADIXKV_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device_) RADIXKV_CUDA_CHECK(cudaSetDevice(device_));
}
CudaDeviceGuard::~CudaDeviceGuard() {
  if (previous_ != device_) static_cast<void>(cudaSetDevice(previous_));
}

CudaEvent::CudaEvent(bool timing) {
  RADIXKV_CUDA_CHECK(
      cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}
CudaEvent::~CudaEvent() {
  if (event_ != nullptr) static_cast<void>(cudaEventDestroy(event_));
}
CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) static_cast<void>(cudaEventDestroy(event_));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}
void CudaEvent::record(cudaStream_t stream) { RADIXKV_CUDA_CHECK(cudaEventRecord(event_, stream)); }
void CudaEvent::synchronize() const { RADIXKV_CUDA_CHECK(cudaEventSynchronize(event_)); }
bool CudaEvent::ready() const {
  const cudaError_t code = cudaEventQuery(event_);
  if (code == cudaErrorNotReady) return false;
  RADIXKV_CUDA_CHECK(code);
  return true;
}
void CudaEvent::make_stream_wait(cudaStream_t stream) const {
  RADIXKV_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}
float CudaEvent::elapsed_ms(const CudaEvent& start, const CudaEvent& end) {
  float ms = 0;
  RADIXKV_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, end.event_));
  return ms;
}

CudaStream::CudaStream() {
  RADIXKV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}
CudaStream::~CudaStream() {
  if (stream_ != nullptr) static_cast<void>(cudaStreamDestroy(stream_));
}
void CudaStream::synchronize() const { RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

PinnedHostBuffer::PinnedHostBuffer(uint64_t bytes) {
  if (bytes == 0) return;
  void* data = nullptr;
  const cudaError_t code = cudaHostAlloc(&data, bytes, cudaHostAllocPortable | cudaHostAllocMapped);
  if (code != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    throw CudaError(code, fmt::format("PinnedHostBuffer: cudaHostAlloc of {} bytes failed: {}",
                                      bytes, describe(code)));
  }
  data_ = static_cast<std::byte*>(data);
  size_ = bytes;
}
PinnedHostBuffer::~PinnedHostBuffer() {
  if (data_ != nullptr) static_cast<void>(cudaFreeHost(data_));
}
PinnedHostBuffer::PinnedHostBuffer(PinnedHostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
PinnedHostBuffer& PinnedHostBuffer::operator=(PinnedHostBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) static_cast<void>(cudaFreeHost(data_));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

// ---- PinnedHostBackend -----------------------------------------------------------------------

PinnedHostBackend::PinnedHostBackend() {
  const CudaProbe probe = probe_cuda();
  if (!probe.available) {
    throw CudaError(cudaErrorNoDevice, "cannot make the pinned host backend: " + probe.reason);
  }
}

void PinnedHostBackend::reserve(uint32_t pages, uint64_t bytes_per_page) {
  if (arena_.data() != nullptr) {
    throw std::logic_error("PinnedHostBackend::reserve: called twice; one backend serves one pool");
  }
  if (pages == 0 || bytes_per_page == 0 ||
      bytes_per_page > std::numeric_limits<uint64_t>::max() / pages) {
    throw std::invalid_argument(fmt::format(
        "PinnedHostBackend::reserve: {} pages of {} bytes is no arena (zero, or over 64 bits)",
        pages, bytes_per_page));
  }
  arena_ = PinnedHostBuffer(uint64_t{pages} * bytes_per_page);
  std::memset(arena_.data(), 0, arena_.size());  // fresh pages are defined, as on the host
  bytes_per_page_ = bytes_per_page;
}

void* PinnedHostBackend::page_address(PageId page) const {
  return arena_.data() + uint64_t{page} * bytes_per_page_;
}

void PinnedHostBackend::copy_page(PageId dst, PageId src) {
  if (dst == src) return;
  std::memcpy(page_address(dst), page_address(src), bytes_per_page_);
}

// ---- batch planning (no device needed) -------------------------------------------------------

std::vector<PageRun> consecutive_runs(std::span<const PageId> pages) {
  // The transfer runs of pages[slot] -> slot: the slots always continue a run.
  std::vector<PageTransfer> to_slots;
  to_slots.reserve(pages.size());
  for (uint32_t slot = 0; slot < pages.size(); ++slot) to_slots.push_back({pages[slot], slot});
  std::vector<PageRun> runs;
  for (const TransferRun& run : transfer_runs(to_slots)) {
    runs.push_back(PageRun{run.src, run.dst, run.count});
  }
  return runs;
}

std::vector<PageCopy> checked_page_copies(std::span<const PageCopy> copies, uint32_t page_count) {
  std::vector<PageCopy> work;
  work.reserve(copies.size());
  for (size_t i = 0; i < copies.size(); ++i) {
    const PageCopy& c = copies[i];
    for (PageId page : {c.dst, c.src}) {
      if (page >= page_count) {
        throw std::invalid_argument(
            fmt::format("copy_pages: copy {} (page {} <- page {}) names page {}, outside the "
                        "arena of {} pages",
                        i, c.dst, c.src, page, page_count));
      }
    }
    if (c.dst != c.src) work.push_back(c);  // copying a page onto itself changes nothing
  }
  std::vector<PageId> written;
  written.reserve(work.size());
  for (const PageCopy& c : work) written.push_back(c.dst);
  std::sort(written.begin(), written.end());
  const auto twice = std::adjacent_find(written.begin(), written.end());
  if (twice != written.end()) {
    throw std::invalid_argument(fmt::format(
        "copy_pages: page {} is the destination of more than one copy in the batch", *twice));
  }
  for (const PageCopy& c : work) {
    if (std::binary_search(written.begin(), written.end(), c.src)) {
      throw std::invalid_argument(fmt::format(
          "copy_pages: page {} is both read (copy to page {}) and written in the same batch; one "
          "launch runs its copies in no order, so split the batch",
          c.src, c.dst));
    }
  }
  return work;
}

// ---- CudaBackend -----------------------------------------------------------------------------

CudaBackend::CudaBackend(int device) {
  const CudaProbe probe = probe_cuda();
  if (!probe.available) {
    throw CudaError(cudaErrorNoDevice, "cannot make the cuda backend: " + probe.reason);
  }
  if (device < 0 || device >= probe.device_count) {
    throw std::invalid_argument(
        fmt::format("CudaBackend: device {} does not exist; {} device(s) answer, numbered from 0",
                    device, probe.device_count));
  }
  device_ = device;
  CudaDeviceGuard guard(device_);
  RADIXKV_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  RADIXKV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaBackend::~CudaBackend() {
  int previous = device_;
  static_cast<void>(cudaGetDevice(&previous));
  static_cast<void>(cudaSetDevice(device_));
  if (arena_ != nullptr) static_cast<void>(cudaFree(arena_));
  if (stream_ != nullptr) static_cast<void>(cudaStreamDestroy(stream_));
  static_cast<void>(cudaSetDevice(previous));
}

void CudaBackend::reserve(uint32_t pages, uint64_t bytes_per_page) {
  if (arena_ != nullptr) {
    throw std::logic_error("CudaBackend::reserve: called twice; one backend serves one pool");
  }
  if (pages == 0 || bytes_per_page == 0) {
    throw std::invalid_argument(fmt::format(
        "CudaBackend::reserve: {} pages of {} bytes is no arena; both must be at least 1", pages,
        bytes_per_page));
  }
  if (bytes_per_page > std::numeric_limits<uint64_t>::max() / pages) {
    throw std::invalid_argument(fmt::format(
        "CudaBackend::reserve: {} pages of {} bytes overflow 64 bits", pages, bytes_per_page));
  }
  const uint64_t bytes = uint64_t{pages} * bytes_per_page;
  CudaDeviceGuard guard(device_);
  void* arena = nullptr;
  const cudaError_t code = cudaMalloc(&arena, bytes);
  if (code != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    throw CudaError(code, fmt::format("CudaBackend::reserve: cudaMalloc of {} pages x {} bytes "
                                      "= {:.2f} GiB on device {} failed: {}",
                                      pages, bytes_per_page, double(bytes) / (1ull << 30), device_,
                                      describe(code)));
  }
  arena_ = static_cast<std::byte*>(arena);
  // Zeroed like the host backend's, so a fresh page is defined.
  RADIXKV_CUDA_CHECK(cudaMemsetAsync(arena_, 0, bytes, stream_));
  RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_));
  pages_ = pages;
  bytes_per_page_ = bytes_per_page;
}

void CudaBackend::check_page(PageId page, const char* what) const {
  if (arena_ == nullptr) {
    throw std::logic_error(fmt::format("CudaBackend::{}: called before reserve()", what));
  }
  if (page >= pages_) {
    throw std::invalid_argument(fmt::format(
        "CudaBackend::{}: page {} is outside the arena of {} pages", what, page, pages_));
  }
}

void* CudaBackend::page_address(PageId page) const {
  check_page(page, "page_address");
  return arena_ + uint64_t{page} * bytes_per_page_;
}

void CudaBackend::copy_page(PageId dst, PageId src) {
  check_page(dst, "copy_page");
  check_page(src, "copy_page");
  if (dst == src) return;
  CudaDeviceGuard guard(device_);
  RADIXKV_CUDA_CHECK(cudaMemcpyAsync(page_address(dst), page_address(src), bytes_per_page_,
                                     cudaMemcpyDeviceToDevice, stream_));
  RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

CudaEvent CudaBackend::copy_pages(std::span<const PageCopy> copies, cudaStream_t stream) {
  if (arena_ == nullptr) throw std::logic_error("CudaBackend::copy_pages: called before reserve()");
  const std::vector<PageCopy> work = checked_page_copies(copies, pages_);
  std::vector<CopyAddresses> pairs;
  pairs.reserve(work.size());
  for (const PageCopy& c : work) pairs.push_back({page_address(c.dst), page_address(c.src)});
  CudaDeviceGuard guard(device_);
  CudaEvent done;
  const uint32_t alignment =
      common_alignment({bytes_per_page_, reinterpret_cast<uintptr_t>(arena_)});
  enqueue_copy_kernel(pairs, bytes_per_page_, alignment, sm_count_, stream);
  done.record(stream);
  return done;
}

void CudaBackend::check_buffer(std::span<const PageId> pages, const PinnedHostBuffer& buffer,
                               const char* what) const {
  if (arena_ == nullptr) {
    throw std::logic_error(fmt::format("CudaBackend::{}: called before reserve()", what));
  }
  const uint64_t slots = buffer.size() / bytes_per_page_;
  if (pages.size() > slots) {
    throw std::invalid_argument(
        fmt::format("CudaBackend::{}: the pinned buffer of {} bytes holds {} pages of {} bytes, "
                    "the list has {}",
                    what, buffer.size(), slots, bytes_per_page_, pages.size()));
  }
  for (PageId page : pages) check_page(page, what);
}

CudaEvent CudaBackend::gather(std::span<const PageId> pages, const PinnedHostBuffer& buffer,
                              cudaStream_t stream, TransferPath path) {
  check_buffer(pages, buffer, "gather");
  return transfer(pages, buffer, stream, path, /*to_host=*/true);
}

CudaEvent CudaBackend::scatter(const PinnedHostBuffer& buffer, std::span<const PageId> pages,
                               cudaStream_t stream, TransferPath path) {
  check_buffer(pages, buffer, "scatter");
  std::vector<PageId> sorted(pages.begin(), pages.end());
  std::sort(sorted.begin(), sorted.end());
  const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  if (twice != sorted.end()) {
    throw std::invalid_argument(fmt::format(
        "CudaBackend::scatter: page {} appears more than once in the list; it would receive two "
        "buffer slots in no order",
        *twice));
  }
  return transfer(pages, buffer, stream, path, /*to_host=*/false);
}

CudaEvent CudaBackend::transfer(std::span<const PageId> pages, const PinnedHostBuffer& buffer,
                                cudaStream_t stream, TransferPath path, bool to_host) {
  CudaDeviceGuard guard(device_);
  CudaEvent done;
  if (path == TransferPath::kCopyEngine) {
    for (const PageRun& run : consecutive_runs(pages)) {
      std::byte* host = buffer.data() + uint64_t{run.first_slot} * bytes_per_page_;
      std::byte* device = arena_ + uint64_t{run.first_page} * bytes_per_page_;
      const uint64_t bytes = uint64_t{run.count} * bytes_per_page_;
      if (to_host) {
        RADIXKV_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
      } else {
        RADIXKV_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
      }
    }
  } else if (!pages.empty()) {
    void* mapped = nullptr;
    RADIXKV_CUDA_CHECK(cudaHostGetDevicePointer(&mapped, buffer.data(), 0));
    auto* host = static_cast<std::byte*>(mapped);
    std::vector<CopyAddresses> pairs;
    pairs.reserve(pages.size());
    for (uint64_t slot = 0; slot < pages.size(); ++slot) {
      std::byte* device = arena_ + uint64_t{pages[slot]} * bytes_per_page_;
      std::byte* slot_bytes = host + slot * bytes_per_page_;
      pairs.push_back(to_host ? CopyAddresses{slot_bytes, device}
                              : CopyAddresses{device, slot_bytes});
    }
    const uint32_t alignment = common_alignment(
        {bytes_per_page_, reinterpret_cast<uintptr_t>(arena_), reinterpret_cast<uintptr_t>(host)});
    enqueue_copy_kernel(pairs, bytes_per_page_, alignment, sm_count_, stream);
  }
  done.record(stream);
  return done;
}

void CudaBackend::write_page(PageId page, std::span<const std::byte> bytes) {
  check_page(page, "write_page");
  if (bytes.size() != bytes_per_page_) {
    throw std::invalid_argument(fmt::format(
        "CudaBackend::write_page: got {} bytes for a page of {}", bytes.size(), bytes_per_page_));
  }
  CudaDeviceGuard guard(device_);
  RADIXKV_CUDA_CHECK(cudaMemcpyAsync(page_address(page), bytes.data(), bytes.size(),
                                     cudaMemcpyHostToDevice, stream_));
  RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::read_page(PageId page, std::span<std::byte> bytes) const {
  check_page(page, "read_page");
  if (bytes.size() != bytes_per_page_) {
    throw std::invalid_argument(
        fmt::format("CudaBackend::read_page: got room for {} bytes, a page has {}", bytes.size(),
                    bytes_per_page_));
  }
  CudaDeviceGuard guard(device_);
  RADIXKV_CUDA_CHECK(cudaMemcpyAsync(bytes.data(), page_address(page), bytes.size(),
                                     cudaMemcpyDeviceToHost, stream_));
  RADIXKV_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace radixkv
