// RemoteStaging: how a runtime with a host tier brings remote pages to its device pool
// (docs/tiers.md, "The remote tier"). The remote tier checks each page's bytes into a host page
// of the host tier's pool (a staging page, private to the load, never in the trie), and the host
// tier's copier moves it to the device page admit allocated for it, with a ticket, as a host-tier
// load does. This is the only way a device pool on a GPU can take remote pages; a runtime with a
// host tier uses it for host-memory device pools too, so one path serves both.
//
// The copier's contract (kv_store/page_copier.h): until a ticket is done nobody may write,
// release or reuse a page of its copy. So this object holds one pool reference on the staging
// page and one on the device page of every copy it started, and releases both in retire() once
// the copy's ticket is done, never before. It holds them whatever happens to the sequence that
// asked: finished or aborted first, its device pages may leave the trie (evicted), and would be
// handed out again while the copier still writes them.
//
// It is also the remote tier's PageArrivals (runtime/remote_pages.h): the tier reads a page's
// bytes when it writes the page to the store (as it leaves the trie, or when cached under
// write-through), and a device page a copy here still writes does not hold them yet; await()
// waits for that copy. (Without it, the tier would put the page's old bytes in the store under
// the page's key, over a good value.)
//
// Invariants: staged() lists every page held here, each once, in issue order; tickets complete in
// that order (the copier's), so retire() stops at the first one not done. writing(page) is the
// ticket of the copy still writing a device page (0: none). The destructor waits for every copy,
// then releases every page: the pools and the copier must outlive this object.
//
// Not thread-safe: the runtime's thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "kv_store/page_copier.h"
#include "kv_store/page_pool.h"
#include "runtime/remote_pages.h"

namespace radixkv::detail {

class RemoteStaging final : public PageArrivals {
 public:
  struct StagedPage {
    CopyTicket ticket;
    PageId host;    // the staging page the bytes were checked into
    PageId device;  // the device page the copy writes
  };

  RemoteStaging(PagePool& device, PagePool& host, PageCopier& copier);
  ~RemoteStaging() override;
  RemoteStaging(const RemoteStaging&) = delete;
  RemoteStaging& operator=(const RemoteStaging&) = delete;

  // Starts copying host_pages[i] -> device_pages[i] (the same count, every page held by the
  // caller). Takes over the caller's reference to each staging page and adds one to each device
  // page; both go back in retire() once the returned ticket is done. Returns 0 for no pages.
  // When the copier throws, nothing is held and the caller keeps its staging pages.
  CopyTicket copy(std::span<const PageId> host_pages, std::span<const PageId> device_pages);
  // The latest ticket of a copy still writing one of `device_pages`, or 0.
  CopyTicket writing(std::span<const PageId> device_pages) const;
  // Releases the pages of every copy whose ticket is done; returns how many copies (pages).
  uint64_t retire();
  bool idle() const { return staged_.empty(); }
  const std::deque<StagedPage>& staged() const { return staged_; }
  // Waits for the copy still writing device page `page` (host pages: never staged in the trie).
  void await(Tier tier, PageId page) override;

 private:
  CopyTicket& ticket_of(PageId device_page) { return writing_[device_page - device_.first_page()]; }

  PagePool& device_;
  PagePool& host_;
  PageCopier& copier_;
  std::deque<StagedPage> staged_;
  std::vector<CopyTicket> writing_;      // by device page - first page: the copy writing it, or 0
  std::vector<PageTransfer> transfers_;  // scratch for copy()
};

}  // namespace radixkv::detail
