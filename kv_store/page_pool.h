// PagePool: a fixed number of KV pages, a free list and a refcount per page.
//
// Ownership rules (the accounting every other layer relies on):
//   - allocate() hands out pages with refcount 1; each holder (the radix tree for the pages it
//     indexes, each live sequence for the pages of its block table) owns one reference.
//   - retain() adds a reference to a page that is already held; release() drops one, and the page
//     returns to the free list when its count reaches zero.
//   - Retaining or releasing a free page, or an id outside the pool, is a caller bug: it throws
//     std::logic_error naming the page and changes nothing.
// Invariant: free_pages() + used_pages() == capacity_pages(), and a page is free (on the free list,
// or never handed out) iff its refcount is zero.
//
// Pages are handed out the released-last first, then in id order: the free list holds the pages
// released so far and the ids never handed out follow it as if listed below it, lowest on top.
// Nothing is written per page up front (the refcounts are zeroed memory, which the system maps on
// first touch), so a pool costs the memory of the pages it hands out, not of its capacity: a replay
// whose capacity is far above what the trace caches does not fault in bookkeeping it never uses.
//
// Page ids are [first_page(), end_page()). A pool made with a layout and a backend owns the
// storage and its ids start at 0. A partition (the second constructor) is a pool of its own over
// a contiguous range of another pool's ids: the same storage and layout, so page ids stay unique
// across all partitions of a pool and every id addresses the same bytes in all of them.
//
// One user: a PrefixCacheRuntime claims its pool, and its host tier's pool, (Claim) for its whole
// life, and a second runtime over either (as its device pool or as its host tier), or over a
// pool whose pages are in use or lent, is refused; two runtimes would each take the other's
// pages for leaks.
//
// Not thread-safe: one owner (a scheduler thread, or a caller holding a lock) at a time. The
// partitions of one pool share no mutable state (each has its own free list and refcounts; the
// backend is only read), so each may have its own owner on its own thread: that is how
// SharedRuntime's shards share one pool. Making and destroying partitions changes the pool they
// come from, and is for one thread while nothing else uses it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv_store/kv_layout.h"
#include "kv_store/page_backend.h"

namespace radixkv {

class PagePool {
 public:
  // capacity_pages must be at least 1 and below kInvalidPage, and the pool no more than 2^64 bytes
  // (std::invalid_argument otherwise, as for a bad layout).
  PagePool(KvLayout layout, uint32_t capacity_pages,
           std::unique_ptr<PageBackend> backend = make_accounting_backend());
  // A partition of `parent`: the next `pages` ids that no partition of it has taken, which must
  // all be free. The parent holds each of them (refcount 1, so they are used pages there) until
  // the partition is destroyed; the parent must outlive it and cannot be claimed meanwhile.
  // Throws std::invalid_argument when the pages are not there, std::logic_error when the parent is
  // claimed or one of those pages is in use.
  PagePool(PagePool& parent, uint32_t pages);
  ~PagePool();
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  // Whole pages that fit in `bytes`; throws std::invalid_argument when that is less than one page
  // (saying how many bytes a page needs) or more than 32-bit page ids can name.
  static uint32_t pages_for_bytes(const KvLayout& layout, uint64_t bytes);

  // All or nothing: appends n fresh pages (refcount 1) to `out` and returns true, or returns false
  // and leaves `out` and the pool untouched when fewer than n are free.
  [[nodiscard]] bool allocate(uint32_t n, std::vector<PageId>& out);
  void retain(PageId page);
  // retain() of every page listed (a page listed twice gains two references); all or nothing:
  // throws, changing nothing, for a page that is not in the pool, is free, or would overflow.
  void retain(std::span<const PageId> pages);
  void release(PageId page);
  // All or nothing: a bad id, or a page listed more often than it is held, throws and changes
  // nothing.
  void release(std::span<const PageId> pages);
  // Throws what release(pages) would for a page that is not in the pool or is free, changing
  // nothing either way. (A page listed more often than it is held is not looked for.)
  void check_held(std::span<const PageId> pages, const char* operation) const;

  uint32_t refcount(PageId page) const;
  // Starts loading the page's refcount into the cache ahead of a release(); a page that is not in
  // the pool is ignored. No effect on the pool. Always inlined: g++ 12 deletes calls to a function
  // that only prefetches, having found it "pure".
  [[gnu::always_inline]] void prefetch(PageId page) const noexcept {
    if (contains(page)) __builtin_prefetch(&refcount_[page - first_], 1);
  }
  bool contains(PageId page) const noexcept {
    return page - first_ < capacity_;
  }  // wraps below first_
  PageId first_page() const noexcept { return first_; }
  PageId end_page() const noexcept { return first_ + capacity_; }

  const KvLayout& layout() const noexcept { return layout_; }
  uint32_t capacity_pages() const noexcept { return capacity_; }
  uint32_t free_pages() const noexcept {
    return static_cast<uint32_t>(free_list_.size()) + (end_page() - never_used_);
  }
  uint32_t used_pages() const noexcept { return capacity_ - free_pages(); }
  uint64_t bytes_per_page() const noexcept { return bytes_per_page_; }
  uint64_t capacity_bytes() const noexcept { return uint64_t{capacity_} * bytes_per_page_; }
  uint64_t used_bytes() const noexcept { return uint64_t{used_pages()} * bytes_per_page_; }
  uint64_t peak_used_pages() const noexcept { return peak_used_; }

  PageBackend& backend() noexcept { return *backend_; }
  const PageBackend& backend() const noexcept { return *backend_; }
  // The page's bytes; throws std::logic_error unless the backend keeps pages in host memory.
  std::span<std::byte> host_bytes(PageId page);

  // Exclusive use of the pool for as long as the Claim lives. Throws std::logic_error, changing
  // nothing, when the pool is claimed already or any of its pages is in use (or lent to
  // partitions), naming `owner`, the owner that holds it, and what is in the way.
  class Claim {
   public:
    Claim(PagePool& pool, std::string_view owner);
    ~Claim() { pool_.claimed_by_.clear(); }
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;

   private:
    PagePool& pool_;
  };

 private:
  void check_held(PageId page, const char* operation) const;
  uint32_t& count(PageId page) { return refcount_[page - first_]; }
  uint32_t count(PageId page) const { return refcount_[page - first_]; }
  // Lists the pages never handed out below the free list (as they would be handed out), so that
  // every free page is on it.
  void list_never_used();
  struct FreeCounts {
    void operator()(uint32_t* counts) const noexcept;
  };
  // `pages` zero refcounts; throws std::bad_alloc when the memory is not there.
  static std::unique_ptr<uint32_t[], FreeCounts> zeroed_counts(uint32_t pages);

  KvLayout layout_;
  uint64_t bytes_per_page_;
  PageId first_ = 0;
  uint32_t capacity_;
  std::unique_ptr<PageBackend> owned_backend_;  // null in a partition
  PageBackend* backend_;
  PagePool* parent_ = nullptr;  // a partition's pool
  uint32_t lent_ = 0;           // ids [first_, first_ + lent_) went to partitions
  uint32_t partitions_ = 0;     // partitions alive
  std::string claimed_by_;      // the owner of the Claim; empty: not claimed
  std::unique_ptr<uint32_t[], FreeCounts> refcount_;  // by page - first_
  std::vector<PageId> free_list_;  // a stack: the page released last is handed out first
  PageId never_used_ = 0;          // ids [never_used_, end_page()) were never handed out
  uint32_t peak_used_ = 0;
};

}  // namespace radixkv
