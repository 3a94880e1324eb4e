// PageCopier: whole-page copies between the two pools of a tiered cache (the device pool and the
// host pool under it), in either direction. The radix tree and the runtime use only this
// interface; make_page_copier picks the implementation from the pools' backends.
//
// The contract every implementation keeps:
//   - copy() enqueues a batch and returns its ticket. Tickets of one copier are numbered 1, 2, 3...
//     in issue order (a batch with nothing to copy returns 0: nothing to wait for) and complete in
//     that order: done(t) implies done(every earlier ticket).
//   - Copies also run in issue order: a copy issued after another that writes page p reads what
//     that one wrote.
//   - The bytes of every source page must be final when copy() is called (a device page's writer
//     on another CUDA stream must have finished: a scheduler that has read back the token sampled
//     by the step that wrote it has waited for that). Until done(ticket) the caller must not
//     write, release or reuse any page of the batch.
//   - Bad input throws std::invalid_argument before anything is enqueued and without using a
//     ticket (checked_transfers lists what is refused). Tickets never issued are refused too.
//   - Not thread-safe, like PagePool: one owner at a time.
//
// Implementations (make_page_copier):
//   instant  either pool has no bytes (AccountingBackend): nothing moves, every ticket is done
//            at once. A pool with bytes that receives pages from one without keeps its own bytes.
//   host     both pools in host memory (HostBackend, or the pinned backend): memcpy per run of
//            consecutive pages, synchronously inside copy(). A worker thread was measured and
//            does not pay on the development machine (docs/cuda_backend.md, "Host copies").
//   cuda     CudaBackend pages <-> pinned host pages (kv_store/cuda_page_copier.h): one
//            cudaMemcpyAsync per run on the copier's own stream, one event per ticket.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kv_store/page_pool.h"

namespace radixkv {

struct PageTransfer {
  PageId src;  // a page of the pool copied from
  PageId dst;  // a page of the pool copied to
};
using CopyTicket = uint64_t;  // 0 = nothing to wait for

class PageCopier {
 public:
  virtual ~PageCopier() = default;
  // Enqueues whole-page copies src (in `from`) -> dst (in `to`); tickets complete in issue order.
  // The caller must not write, release or reuse any page involved until done(ticket).
  virtual CopyTicket copy(PagePool& from, PagePool& to, std::span<const PageTransfer> pages) = 0;
  virtual bool done(CopyTicket ticket) = 0;  // non-blocking
  virtual void wait(CopyTicket ticket) = 0;  // blocks until done
  virtual std::string_view name() const = 0;
};

// The copier for a device pool and the host pool under it. Throws std::invalid_argument when the
// pools are one and the same, their pages differ in size, the host pool's pages are on a device,
// or no implementation serves the pair (a CUDA device pool over a pageable host pool: the host
// tier of a GPU must use make_pinned_host_backend(), since copies from pageable memory are not
// asynchronous). The pools must outlive the copier.
std::unique_ptr<PageCopier> make_page_copier(const PagePool& device, const PagePool& host);

// The work of one batch, after the checks every copier makes. Refused, naming the transfer:
// pools whose pages differ in size, a page outside its pool, a page nobody holds (refcount 0),
// a destination written twice. When `from` and `to` are one pool, also a page both read and
// written; a page copied onto itself is dropped there (it changes nothing).
std::vector<PageTransfer> checked_transfers(const PagePool& from, const PagePool& to,
                                            std::span<const PageTransfer> pages);

// A run of transfers that moves as one contiguous copy: src, src+1, ... -> dst, dst+1, ...
struct TransferRun {
  PageId src;
  PageId dst;
  uint32_t count;
};
// Splits a batch into maximal runs, in order: {7->2, 8->3, 9->4, 1->5} -> {7->2 x3}, {1->5 x1}.
std::vector<TransferRun> transfer_runs(std::span<const PageTransfer> pages);

// What radixkv's copiers share: copy() checks the pools (the copier's own two) and the batch,
// numbers the ticket and hands the runs to enqueue(); done() and wait() refuse tickets never
// issued and answer without asking the implementation for tickets known to be complete.
class PageCopierBase : public PageCopier {
 public:
  // Throws std::invalid_argument when the pools are one and the same or their pages differ in
  // size.
  PageCopierBase(const PagePool& device, const PagePool& host);

  CopyTicket copy(PagePool& from, PagePool& to, std::span<const PageTransfer> pages) final;
  bool done(CopyTicket ticket) final;
  void wait(CopyTicket ticket) final;

  CopyTicket issued() const noexcept { return issued_; }  // the latest ticket handed out
  const PagePool& device_pool() const noexcept { return *device_; }
  const PagePool& host_pool() const noexcept { return *host_; }

 protected:
  // Starts the copies of `ticket`, a non-empty batch already checked. May throw (a CUDA error);
  // the ticket is then not issued.
  virtual void enqueue(CopyTicket ticket, PagePool& from, PagePool& to,
                       std::span<const TransferRun> runs) = 0;
  // The latest ticket known complete, without blocking; every ticket up to it is complete.
  virtual CopyTicket poll() = 0;
  // Returns once `ticket` (issued, not yet known complete) is complete.
  virtual void block_until(CopyTicket ticket) = 0;

 private:
  void check_ticket(CopyTicket ticket, const char* operation) const;

  const PagePool* device_;
  const PagePool* host_;
  CopyTicket issued_ = 0;
  CopyTicket completed_ = 0;
};

}  // namespace radixkv
