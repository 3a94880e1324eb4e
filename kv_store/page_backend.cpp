#include "kv_store/page_backend.h"

#include <fmt/format.h>
#include <mimalloc.h>

#include <cstring>
#include <new>

namespace radixkv {

HostBackend::~HostBackend() { mi_free(arena_); }

void HostBackend::reserve(uint32_t pages, uint64_t bytes_per_page) {
  const uint64_t bytes = uint64_t{pages} * bytes_per_page;
  // 64-byte alignment so a page can be read with vector loads; zeroed so fresh pages are defined.
  arena_ = static_cast<std::byte*>(mi_zalloc_aligned(bytes, 64));
  if (arena_ == nullptr && bytes != 0) {
    throw std::bad_alloc();
  }
  bytes_per_page_ = bytes_per_page;
}

void* HostBackend::page_address(PageId page) const { return arena_ + uint64_t{page} * bytes_per_page_; }

void HostBackend::copy_page(PageId dst, PageId src) {
  if (dst == src) return;
  std::memcpy(page_address(dst), page_address(src), bytes_per_page_);
}

std::unique_ptr<PageBackend> make_accounting_backend() { return std::make_unique<AccountingBackend>(); }
std::unique_ptr<PageBackend> make_host_backend() { return std::make_unique<HostBackend>(); }

}  // namespace radixkv
