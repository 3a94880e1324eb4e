#include "kv_store/cuda_page_copier.h"

#include <fmt/format.h>

#include <stdexcept>

namespace radixkv {
namespace {

const CudaBackend& device_backend_of(const PagePool& device) {
  const auto* backend = dynamic_cast<const CudaBackend*>(&device.backend());
  if (backend == nullptr) {
    throw std::invalid_argument(
        fmt::format("CudaPageCopier: the device pool's backend '{}' is not the CUDA backend "
                    "(make_cuda_backend)",
                    device.backend().name()));
  }
  return *backend;
}

void check_pinned(const PagePool& host) {
  if (dynamic_cast<const PinnedHostBackend*>(&host.backend()) != nullptr) return;
  throw std::invalid_argument(fmt::format(
      "CudaPageCopier: the host pool's backend '{}' is not pinned; the host tier under a CUDA "
      "device pool needs make_pinned_host_backend(), since copies from pageable memory are not "
      "asynchronous",
      host.backend().name()));
}

}  // namespace

CudaPageCopier::CudaPageCopier(const PagePool& device, const PagePool& host)
    : PageCopierBase(device, host), device_(device_backend_of(device).device()) {
  check_pinned(host);
  CudaDeviceGuard guard(device_);
  RADIXKV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaPageCopier::CudaPageCopier(const PagePool& pool)
    : PageCopierBase(pool), device_(device_backend_of(pool).device()) {
  CudaDeviceGuard guard(device_);
  RADIXKV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaPageCopier::~CudaPageCopier() {
  int previous = device_;
  static_cast<void>(cudaGetDevice(&previous));
  static_cast<void>(cudaSetDevice(device_));
  static_cast<void>(cudaStreamSynchronize(stream_));  // no DMA may outlive the pages it touches
  in_flight_.clear();
  spare_events_.clear();
  static_cast<void>(cudaStreamDestroy(stream_));
  static_cast<void>(cudaSetDevice(previous));
}

void CudaPageCopier::enqueue(CopyTicket ticket, PagePool& from, PagePool& to,
                             std::span<const TransferRun> runs) {
  CudaDeviceGuard guard(device_);
  const uint64_t page_bytes = from.bytes_per_page();
  for (const TransferRun& run : runs) {
    RADIXKV_CUDA_CHECK(cudaMemcpyAsync(to.backend().page_address(run.dst),
                                       from.backend().page_address(run.src), run.count * page_bytes,
                                       cudaMemcpyDefault, stream_));
  }
  CudaEvent event = spare_events_.empty() ? CudaEvent() : std::move(spare_events_.back());
  if (!spare_events_.empty()) spare_events_.pop_back();
  event.record(stream_);
  in_flight_.emplace_back(ticket, std::move(event));
}

void CudaPageCopier::retire_front() {
  spare_events_.push_back(std::move(in_flight_.front().second));
  in_flight_.pop_front();
}

CopyTicket CudaPageCopier::poll() {
  while (!in_flight_.empty() && in_flight_.front().second.ready()) retire_front();
  return in_flight_.empty() ? issued() : in_flight_.front().first - 1;
}

void CudaPageCopier::block_until(CopyTicket ticket) {
  if (in_flight_.empty() || ticket < in_flight_.front().first) return;  // already retired
  in_flight_[ticket - in_flight_.front().first].second.synchronize();
  // Events of one stream fire in order: every earlier ticket is complete too.
  while (!in_flight_.empty() && in_flight_.front().first <= ticket) retire_front();
}

}  // namespace radixkv
