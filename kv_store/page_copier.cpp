#include "kv_store/page_copier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#if defined(RADIXKV_HAVE_CUDA)
#include "kv_store/cuda_page_copier.h"
#endif

namespace radixkv {
namespace {

std::string describe_pages(const PagePool& pool) {
  return fmt::format("{} bytes ({})", pool.bytes_per_page(), pool.layout().to_string());
}

void check_same_page_size(const PagePool& a, const char* a_name, const PagePool& b,
                          const char* b_name, const char* who) {
  if (a.bytes_per_page() == b.bytes_per_page()) return;
  throw std::invalid_argument(fmt::format(
      "{}: the {} pool's pages hold {}, the {} pool's {}; a copy moves whole pages, so both "
      "pools need one page size",
      who, a_name, describe_pages(a), b_name, describe_pages(b)));
}

// Nothing to move: one pool (or both) keeps no bytes.
class InstantCopier final : public PageCopierBase {
 public:
  using PageCopierBase::PageCopierBase;
  std::string_view name() const override { return "instant"; }

 protected:
  void enqueue(CopyTicket, PagePool&, PagePool&, std::span<const TransferRun>) override {}
  CopyTicket poll() override { return issued(); }
  void block_until(CopyTicket) override {}
};

// Both pools in host memory: memcpy per run, done before copy() returns. Synchronous on purpose
// (a worker thread was measured against it: docs/cuda_backend.md, "Host copies").
class HostCopier final : public PageCopierBase {
 public:
  using PageCopierBase::PageCopierBase;
  std::string_view name() const override { return "host"; }

 protected:
  void enqueue(CopyTicket, PagePool& from, PagePool& to,
               std::span<const TransferRun> runs) override {
    const uint64_t page_bytes = from.bytes_per_page();
    for (const TransferRun& run : runs) {
      std::memcpy(to.backend().page_address(run.dst), from.backend().page_address(run.src),
                  run.count * page_bytes);
    }
  }
  CopyTicket poll() override { return issued(); }
  void block_until(CopyTicket) override {}
};

}  // namespace

std::vector<PageTransfer> checked_transfers(const PagePool& from, const PagePool& to,
                                            std::span<const PageTransfer> pages) {
  check_same_page_size(from, "source", to, "destination", "PageCopier::copy");
  const bool one_pool = &from == &to;
  // Throws unless `page` is inside `pool` and held.
  auto check_held = [](const PagePool& pool, PageId page, const char* role, const char* verb,
                       size_t i, const PageTransfer& t) {
    const char* why = !pool.contains(page)       ? "outside"
                      : pool.refcount(page) == 0 ? "free (refcount 0) in"
                                                 : nullptr;
    if (why == nullptr) return;
    throw std::invalid_argument(fmt::format(
        "PageCopier::copy: transfer {} (page {} -> page {}) {} page {}, {} the {} pool of {} "
        "pages; a copy involves only pages the caller holds",
        i, t.src, t.dst, verb, page, why, role, pool.capacity_pages()));
  };

  std::vector<PageTransfer> work;
  work.reserve(pages.size());
  std::vector<std::pair<PageId, size_t>> written;  // (destination, transfer index)
  written.reserve(pages.size());
  for (size_t i = 0; i < pages.size(); ++i) {
    const PageTransfer& t = pages[i];
    check_held(from, t.src, "source", "reads", i, t);
    check_held(to, t.dst, "destination", "writes", i, t);
    if (one_pool && t.src == t.dst) continue;  // a page copied onto itself: nothing changes
    work.push_back(t);
    written.emplace_back(t.dst, i);
  }
  std::sort(written.begin(), written.end());
  for (size_t k = 1; k < written.size(); ++k) {
    if (written[k].first == written[k - 1].first) {
      throw std::invalid_argument(fmt::format(
          "PageCopier::copy: transfers {} and {} both write page {} of the destination pool; a "
          "batch writes each page once",
          written[k - 1].second, written[k].second, written[k].first));
    }
  }
  if (one_pool) {  // then a page read by one transfer and written by another would race
    for (size_t i = 0; i < pages.size(); ++i) {
      const PageId src = pages[i].src;
      if (src == pages[i].dst) continue;
      const auto hit =
          std::lower_bound(written.begin(), written.end(), std::pair<PageId, size_t>{src, 0});
      if (hit != written.end() && hit->first == src) {
        throw std::invalid_argument(fmt::format(
            "PageCopier::copy: page {} is both read (transfer {}) and written (transfer {}) in "
            "one batch within one pool; split the batch",
            src, i, hit->second));
      }
    }
  }
  return work;
}

std::vector<TransferRun> transfer_runs(std::span<const PageTransfer> pages) {
  std::vector<TransferRun> runs;
  for (const PageTransfer& t : pages) {
    if (!runs.empty()) {
      TransferRun& last = runs.back();
      // Compared without wrapping: a run ending at kInvalidPage does not continue at page 0.
      const bool room =
          last.src <= kInvalidPage - last.count && last.dst <= kInvalidPage - last.count;
      if (room && t.src == last.src + last.count && t.dst == last.dst + last.count) {
        ++last.count;
        continue;
      }
    }
    runs.push_back(TransferRun{t.src, t.dst, 1});
  }
  return runs;
}

PageCopierBase::PageCopierBase(const PagePool& device, const PagePool& host)
    : device_(&device), host_(&host) {
  if (&device == &host) {
    throw std::invalid_argument(
        "PageCopier: the device pool and the host pool are the same pool; each tier needs its "
        "own");
  }
  check_same_page_size(device, "device", host, "host", "PageCopier");
}

PageCopierBase::PageCopierBase(const PagePool& pool) : device_(&pool), host_(&pool) {}

CopyTicket PageCopierBase::copy(PagePool& from, PagePool& to, std::span<const PageTransfer> pages) {
  for (const auto& [pool, role] : {std::pair{&from, "source"}, std::pair{&to, "destination"}}) {
    if (pool != device_ && pool != host_) {
      throw std::invalid_argument(fmt::format(
          "PageCopier::copy: the {} pool is neither the device pool nor the host pool this {} "
          "copier was made for",
          role, name()));
    }
  }
  const std::vector<PageTransfer> work = checked_transfers(from, to, pages);
  if (work.empty()) return 0;
  const std::vector<TransferRun> runs = transfer_runs(work);
  const CopyTicket ticket = issued_ + 1;
  enqueue(ticket, from, to, runs);
  issued_ = ticket;
  return ticket;
}

void PageCopierBase::check_ticket(CopyTicket ticket, const char* operation) const {
  if (ticket <= issued_) return;
  throw std::invalid_argument(
      fmt::format("PageCopier::{}: ticket {} was never issued by this {} copier (the latest is {})",
                  operation, ticket, name(), issued_));
}

bool PageCopierBase::done(CopyTicket ticket) {
  check_ticket(ticket, "done");
  if (ticket > completed_) completed_ = std::max(completed_, poll());
  return ticket <= completed_;
}

void PageCopierBase::wait(CopyTicket ticket) {
  check_ticket(ticket, "wait");
  if (ticket <= completed_) return;
  block_until(ticket);
  completed_ = ticket;
}

std::unique_ptr<PageCopier> make_page_copier(const PagePool& device, const PagePool& host) {
  const StorageKind device_kind = device.backend().storage();
  const StorageKind host_kind = host.backend().storage();
  if (device_kind == StorageKind::kNone || host_kind == StorageKind::kNone) {
    return std::make_unique<InstantCopier>(device, host);
  }
  if (host_kind == StorageKind::kDevice) {
    throw std::invalid_argument(fmt::format(
        "make_page_copier: the host pool's backend '{}' keeps its pages on a device; the host "
        "tier needs host memory (the host backend, or make_pinned_host_backend() under a GPU)",
        host.backend().name()));
  }
  if (device_kind == StorageKind::kHost) return std::make_unique<HostCopier>(device, host);
#if defined(RADIXKV_HAVE_CUDA)
  return std::make_unique<CudaPageCopier>(device, host);
#else
  throw std::invalid_argument(
      fmt::format("make_page_copier: no copier moves pages of the device pool's backend '{}' "
                  "(radixkv was built without CUDA)",
                  device.backend().name()));
#endif
}

std::unique_ptr<PageCopier> make_page_copier(const PagePool& pool) {
  switch (pool.backend().storage()) {
    case StorageKind::kNone:
      return std::make_unique<InstantCopier>(pool);
    case StorageKind::kHost:
      return std::make_unique<HostCopier>(pool);
    case StorageKind::kDevice:
      break;
  }
#if defined(RADIXKV_HAVE_CUDA)
  return std::make_unique<CudaPageCopier>(pool);
#else
  throw std::invalid_argument(
      fmt::format("make_page_copier: no copier moves pages within a pool of backend '{}' "
                  "(radixkv was built without CUDA)",
                  pool.backend().name()));
#endif
}

}  // namespace radixkv
