// CudaPageCopier: the PageCopier (kv_store/page_copier.h) between a CUDA device pool
// (CudaBackend) and a pinned host pool (PinnedHostBackend), in either direction, or within one of
// them. Only built with CUDA (RADIXKV_HAVE_CUDA); make_page_copier chooses it.
//
// How it keeps the PageCopier contract:
//   - every batch goes on the copier's own non-blocking stream, one cudaMemcpyAsync per run of
//     consecutive pages (transfer_runs; cudaMemcpyDefault, so one call serves every direction),
//     followed by one event for its ticket. One stream: copies run, and tickets complete, in issue
//     order.
//   - done() queries the events of the oldest tickets in flight (never blocks); wait() synchronises
//     the ticket's own event.
//   - The stream does not wait for work on the caller's streams: a source page must be final when
//     copy() is called (page_copier.h).
//   - CUDA failures throw CudaError; a batch that fails part way is not issued, and its pages'
//     bytes are undefined. The destructor waits for every copy in flight, so the pools may be
//     freed after it.
#pragma once

#if defined(RADIXKV_HAVE_CUDA)

#include <deque>
#include <utility>
#include <vector>

#include "kv_store/cuda_backend.h"
#include "kv_store/page_copier.h"

namespace radixkv {

class CudaPageCopier final : public PageCopierBase {
 public:
  // Throws std::invalid_argument unless the device pool's backend is a CudaBackend and the host
  // pool's a PinnedHostBackend (and as PageCopierBase does).
  CudaPageCopier(const PagePool& device, const PagePool& host);
  // Within one CUDA pool (make_page_copier(pool)): device-to-device copies.
  explicit CudaPageCopier(const PagePool& pool);
  ~CudaPageCopier() override;
  CudaPageCopier(const CudaPageCopier&) = delete;
  CudaPageCopier& operator=(const CudaPageCopier&) = delete;

  std::string_view name() const override { return "cuda"; }
  cudaStream_t stream() const { return stream_; }

 protected:
  void enqueue(CopyTicket ticket, PagePool& from, PagePool& to,
               std::span<const TransferRun> runs) override;
  CopyTicket poll() override;
  void block_until(CopyTicket ticket) override;

 private:
  void retire_front();

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::deque<std::pair<CopyTicket, CudaEvent>> in_flight_;  // consecutive tickets, oldest first
  std::vector<CudaEvent> spare_events_;                     // fired events, for reuse
};

}  // namespace radixkv

#endif  // RADIXKV_HAVE_CUDA
