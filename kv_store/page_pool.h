// PagePool: a fixed number of KV pages, a free list and a refcount per page.
//
// Ownership rules (the accounting every other layer relies on):
//   - allocate() hands out pages with refcount 1; each holder (the radix tree for the pages it
//     indexes, each live sequence for the pages of its block table) owns one reference.
//   - retain() adds a reference to a page that is already held; release() drops one, and the page
//     returns to the free list when its count reaches zero.
//   - Retaining or releasing a free page, or an id outside the pool, is a caller bug: it throws
//     std::logic_error naming the page and changes nothing.
// Invariant: free_pages() + used_pages() == capacity_pages(), and a page is on the free list iff
// its refcount is zero.
//
// Not thread-safe: one owner (a scheduler thread, or a caller holding a lock) at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kv_store/kv_layout.h"
#include "kv_store/page_backend.h"

namespace radixkv {

class PagePool {
 public:
  // capacity_pages must be at least 1 and below kInvalidPage.
  PagePool(KvLayout layout, uint32_t capacity_pages,
           std::unique_ptr<PageBackend> backend = make_accounting_backend());

  // Whole pages that fit in `bytes`; throws std::invalid_argument when that is less than one page
  // (saying how many bytes a page needs) or more than 32-bit page ids can name.
  static uint32_t pages_for_bytes(const KvLayout& layout, uint64_t bytes);

  // All or nothing: appends n fresh pages (refcount 1) to `out` and returns true, or returns false
  // and leaves `out` and the pool untouched when fewer than n are free.
  [[nodiscard]] bool allocate(uint32_t n, std::vector<PageId>& out);
  void retain(PageId page);
  void release(PageId page);
  // All or nothing: a bad id, or a page listed more often than it is held, throws and changes
  // nothing.
  void release(std::span<const PageId> pages);

  uint32_t refcount(PageId page) const;
  bool contains(PageId page) const { return page < capacity_; }

  const KvLayout& layout() const { return layout_; }
  uint32_t capacity_pages() const { return capacity_; }
  uint32_t free_pages() const { return static_cast<uint32_t>(free_list_.size()); }
  uint32_t used_pages() const { return capacity_ - free_pages(); }
  uint64_t bytes_per_page() const { return bytes_per_page_; }
  uint64_t capacity_bytes() const { return uint64_t{capacity_} * bytes_per_page_; }
  uint64_t used_bytes() const { return uint64_t{used_pages()} * bytes_per_page_; }
  uint64_t peak_used_pages() const { return peak_used_; }

  PageBackend& backend() { return *backend_; }
  const PageBackend& backend() const { return *backend_; }
  // The page's bytes; throws std::logic_error unless the backend keeps pages in host memory.
  std::span<std::byte> host_bytes(PageId page);

 private:
  void check_held(PageId page, const char* operation) const;

  KvLayout layout_;
  uint64_t bytes_per_page_;
  uint32_t capacity_;
  std::unique_ptr<PageBackend> backend_;
  std::vector<uint32_t> refcount_;
  std::vector<PageId> free_list_;  // a stack: the page released last is handed out first
  uint32_t peak_used_ = 0;
};

}  // namespace radixkv
