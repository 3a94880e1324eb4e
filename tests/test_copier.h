// TestCopier: a PageCopier for the tier tests (kv_store/page_copier.h). It copies page bytes with
// memcpy when both pools keep them in host memory and copies nothing for accounting backends.
// Deferred, it runs copies only when wait() or complete_next() says so, so that tests can look at
// loads in flight. Either way it checks what the interface promises the caller must keep: every
// page of a copy is held (refcount > 0) when the copy is issued and still when it runs, so a tier
// that released or reused a page too early fails here.
#pragma once

#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <stdexcept>
#include <vector>

#include "kv_store/page_copier.h"

namespace radixkv::testing {

class TestCopier final : public PageCopier {
 public:
  explicit TestCopier(bool deferred = false) : deferred_(deferred) {}

  CopyTicket copy(PagePool& from, PagePool& to, std::span<const PageTransfer> pages) override {
    if (from.bytes_per_page() != to.bytes_per_page()) {
      throw std::invalid_argument(fmt::format("TestCopier: pages of {} and {} bytes",
                                              from.bytes_per_page(), to.bytes_per_page()));
    }
    check_held(from, to, pages, "issued");
    queue_.push_back({++issued_, &from, &to, {pages.begin(), pages.end()}});
    if (!deferred_) wait(issued_);
    return issued_;
  }
  bool done(CopyTicket ticket) override { return ticket <= completed_; }
  void wait(CopyTicket ticket) override {
    while (completed_ < ticket && !queue_.empty()) complete_next();
  }
  std::string_view name() const override { return "test"; }

  // Runs the oldest pending copy; false when none is pending.
  bool complete_next() {
    if (queue_.empty()) return false;
    Batch& batch = queue_.front();
    check_held(*batch.from, *batch.to, batch.pages, "run");
    const bool bytes = batch.from->backend().storage() == StorageKind::kHost &&
                       batch.to->backend().storage() == StorageKind::kHost;
    for (const PageTransfer& t : batch.pages) {
      if (bytes) {
        std::memcpy(batch.to->host_bytes(t.dst).data(), batch.from->host_bytes(t.src).data(),
                    batch.from->bytes_per_page());
      }
      ++pages_copied_;
    }
    completed_ = batch.ticket;
    queue_.pop_front();
    return true;
  }
  uint64_t pending() const { return queue_.size(); }
  uint64_t pages_copied() const { return pages_copied_; }
  CopyTicket issued() const { return issued_; }

 private:
  struct Batch {
    CopyTicket ticket;
    PagePool* from;
    PagePool* to;
    std::vector<PageTransfer> pages;
  };

  static void check_held(const PagePool& from, const PagePool& to,
                         std::span<const PageTransfer> pages, const char* when) {
    for (const PageTransfer& t : pages) {
      if (!from.contains(t.src) || from.refcount(t.src) == 0 || !to.contains(t.dst) ||
          to.refcount(t.dst) == 0) {
        throw std::logic_error(
            fmt::format("TestCopier: a copy {} -> {} was {} with a page that nobody holds", t.src,
                        t.dst, when));
      }
    }
  }

  bool deferred_;
  std::deque<Batch> queue_;
  CopyTicket issued_ = 0;
  CopyTicket completed_ = 0;
  uint64_t pages_copied_ = 0;
};

}  // namespace radixkv::testing
