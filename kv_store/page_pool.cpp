#include "kv_store/page_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <new>
#include <stdexcept>

namespace radixkv {

PagePool::PagePool(KvLayout layout, uint32_t capacity_pages, std::unique_ptr<PageBackend> backend)
    : layout_(layout),
      bytes_per_page_(0),
      capacity_(capacity_pages),
      owned_backend_(backend ? std::move(backend) : make_accounting_backend()),
      backend_(owned_backend_.get()) {
  layout_.validate();
  bytes_per_page_ = layout_.bytes_per_page();
  if (capacity_pages == 0 || capacity_pages == kInvalidPage) {
    throw std::invalid_argument(
        fmt::format("PagePool: capacity must be between 1 and {} pages, got {}", kInvalidPage - 1,
                    capacity_pages));
  }
  if (uint64_t bytes = 0; __builtin_mul_overflow(uint64_t{capacity_}, bytes_per_page_, &bytes)) {
    throw std::invalid_argument(
        fmt::format("PagePool: {} pages of {} bytes pass 2^64 bytes", capacity_, bytes_per_page_));
  }
  backend_->reserve(capacity_, bytes_per_page_);
  refcount_ = zeroed_counts(capacity_);
  never_used_ = first_;
}

PagePool::PagePool(PagePool& parent, uint32_t pages)
    : layout_(parent.layout_),
      bytes_per_page_(parent.bytes_per_page_),
      first_(parent.first_ + parent.lent_),
      capacity_(pages),
      backend_(parent.backend_),
      parent_(&parent) {
  if (!parent.claimed_by_.empty()) {
    throw std::logic_error("PagePool: a pool that a runtime uses cannot be split into partitions");
  }
  const uint32_t left = parent.capacity_ - parent.lent_;
  if (pages == 0 || pages > left) {
    throw std::invalid_argument(
        fmt::format("PagePool: a partition needs between 1 and the {} pages not yet lent, got {}",
                    left, pages));
  }
  for (PageId page = first_; page < end_page(); ++page) {
    if (parent.count(page) != 0) {
      throw std::logic_error(fmt::format(
          "PagePool: page {} is in use, so it cannot go to a partition (pages [{}, {}))", page,
          first_, end_page()));
    }
  }
  // The parent holds every page of the partition, one reference each, until it comes back.
  for (PageId page = first_; page < end_page(); ++page) parent.count(page) = 1;
  parent.list_never_used();
  std::erase_if(parent.free_list_, [&](PageId page) { return contains(page); });
  parent.lent_ += pages;
  ++parent.partitions_;
  refcount_ = zeroed_counts(capacity_);
  never_used_ = first_;
}

PagePool::~PagePool() {
  if (parent_ == nullptr) return;
  for (PageId page = first_; page < end_page(); ++page) {
    parent_->count(page) = 0;
    parent_->free_list_.push_back(page);
  }
  // Once every partition is back the parent can be split afresh from its first id.
  if (--parent_->partitions_ == 0) parent_->lent_ = 0;
}

void PagePool::list_never_used() {
  std::vector<PageId> listed;
  listed.reserve(free_list_.size() + (end_page() - never_used_));
  for (PageId page = end_page(); page-- > never_used_;) listed.push_back(page);  // lowest on top
  listed.insert(listed.end(), free_list_.begin(), free_list_.end());
  free_list_ = std::move(listed);
  never_used_ = end_page();
}

void PagePool::FreeCounts::operator()(uint32_t* counts) const noexcept { std::free(counts); }

// The C library's calloc, not heap::allocate_zeroed: a large block is fresh memory from the system,
// which it knows to be zero and does not write, whereas mimalloc clears it (4 bytes a page, one
// fault every 1,024 pages, for pages the pool may never hand out).
std::unique_ptr<uint32_t[], PagePool::FreeCounts> PagePool::zeroed_counts(uint32_t pages) {
  auto* counts = static_cast<uint32_t*>(std::calloc(pages, sizeof(uint32_t)));
  if (counts == nullptr) throw std::bad_alloc();
  return std::unique_ptr<uint32_t[], FreeCounts>(counts);
}

PagePool::Claim::Claim(PagePool& pool, std::string_view owner) : pool_(pool) {
  if (!pool.claimed_by_.empty()) {
    throw std::logic_error(fmt::format(
        "{}: its PagePool already serves another runtime (claimed by {}); give each runtime its "
        "own pools, device and host (SharedRuntime splits one pool between threads)",
        owner, pool.claimed_by_));
  }
  if (pool.used_pages() != 0) {
    throw std::logic_error(fmt::format(
        "{}: {} of its PagePool's {} pages are in use{}; a runtime needs a pool of free pages",
        owner, pool.used_pages(), pool.capacity_, pool.lent_ > 0 ? " (lent to partitions)" : ""));
  }
  pool.claimed_by_ = owner;
}

uint32_t PagePool::pages_for_bytes(const KvLayout& layout, uint64_t bytes) {
  layout.validate();
  const uint64_t per_page = layout.bytes_per_page();
  const uint64_t pages = bytes / per_page;
  if (pages == 0) {
    throw std::invalid_argument(
        fmt::format("a budget of {} bytes holds no page: one page of {} tokens needs {} bytes",
                    bytes, layout.page_tokens, per_page));
  }
  if (pages >= kInvalidPage) {
    throw std::invalid_argument(fmt::format(
        "a budget of {} bytes is {} pages, more than 32-bit page ids can name", bytes, pages));
  }
  return static_cast<uint32_t>(pages);
}

bool PagePool::allocate(uint32_t n, std::vector<PageId>& out) {
  if (n > free_pages()) return false;
  for (uint32_t i = 0; i < n; ++i) {
    PageId page = never_used_;
    if (free_list_.empty()) {
      ++never_used_;
    } else {
      page = free_list_.back();
      free_list_.pop_back();
    }
    count(page) = 1;
    out.push_back(page);
  }
  if (used_pages() > peak_used_) peak_used_ = used_pages();
  return true;
}

void PagePool::check_held(PageId page, const char* operation) const {
  if (!contains(page)) {
    throw std::logic_error(fmt::format("PagePool::{}: page {} is not in this pool (pages [{}, {}))",
                                       operation, page, first_, end_page()));
  }
  if (count(page) == 0) {
    throw std::logic_error(
        fmt::format("PagePool::{}: page {} is free (refcount 0)", operation, page));
  }
}

void PagePool::retain(PageId page) {
  check_held(page, "retain");
  if (count(page) == std::numeric_limits<uint32_t>::max()) {
    throw std::logic_error(
        fmt::format("PagePool::retain: refcount of page {} would overflow", page));
  }
  ++count(page);
}

void PagePool::retain(std::span<const PageId> pages) {
  // One pass; at the first bad page, what came before is undone and the error names it. The pool's
  // bounds are read once: a store to a refcount could alias them (both uint32_t), which would
  // otherwise reload them for every page.
  uint32_t* const counts = refcount_.get();
  const PageId first = first_, capacity = capacity_;
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const PageId at = pages[i] - first;
    if (at >= capacity || counts[at] == 0 || counts[at] == std::numeric_limits<uint32_t>::max()) {
      for (std::size_t j = 0; j < i; ++j) --counts[pages[j] - first];
      retain(pages[i]);  // throws, saying why
    }
    ++counts[at];
  }
}

void PagePool::release(PageId page) {
  check_held(page, "release");
  if (--count(page) == 0) free_list_.push_back(page);
}

void PagePool::check_held(std::span<const PageId> pages, const char* operation) const {
  for (PageId page : pages) {
    if (!contains(page) || count(page) == 0) check_held(page, operation);  // throws, saying why
  }
}

void PagePool::release(std::span<const PageId> pages) {
  // All valid, or nothing changes. Checking every id up front is not enough: a page listed more
  // often than it is held runs out part way. So release in order and, at the first bad id, undo
  // what came before (the pages freed here are the newest on the free list) and throw. Bounds are
  // read once, as in retain().
  uint32_t* const counts = refcount_.get();
  const PageId first = first_, capacity = capacity_;
  const std::size_t free_before = free_list_.size();
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const PageId page = pages[i];
    const PageId at = page - first;
    if (at >= capacity || counts[at] == 0) {
      const bool listed_before =
          std::find(pages.begin(), pages.begin() + i, page) != pages.begin() + i;
      free_list_.resize(free_before);
      for (std::size_t j = 0; j < i; ++j) ++counts[pages[j] - first];
      if (listed_before) {
        throw std::logic_error(fmt::format(
            "PagePool::release: page {} is listed more often than it is held (refcount {})", page,
            count(page)));
      }
      check_held(page, "release");  // throws: not in the pool, or free
    }
    if (--counts[at] == 0) free_list_.push_back(page);
  }
}

uint32_t PagePool::refcount(PageId page) const {
  if (!contains(page)) {
    throw std::logic_error(
        fmt::format("PagePool::refcount: page {} is not in this pool (pages [{}, {}))", page,
                    first_, end_page()));
  }
  return count(page);
}

std::span<std::byte> PagePool::host_bytes(PageId page) {
  if (backend_->storage() != StorageKind::kHost) {
    throw std::logic_error(
        fmt::format("PagePool::host_bytes: the {} backend keeps no host bytes", backend_->name()));
  }
  check_held(page, "host_bytes");
  return {static_cast<std::byte*>(backend_->page_address(page)), bytes_per_page_};
}

}  // namespace radixkv
