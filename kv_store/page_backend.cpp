#include "kv_store/page_backend.h"

#include <cstring>

#include "kv_store/heap.h"

namespace radixkv {

HostBackend::~HostBackend() { heap::release(arena_); }

void HostBackend::reserve(uint32_t pages, uint64_t bytes_per_page) {
  const uint64_t bytes = uint64_t{pages} * bytes_per_page;
  // 64-byte alignment so a page can be read with vector loads; zeroed so fresh pages are defined.
  arena_ = static_cast<std::byte*>(heap::allocate_aligned_zeroed(bytes, 64));
  bytes_per_page_ = bytes_per_page;
}

void* HostBackend::page_address(PageId page) const {
  return arena_ + uint64_t{page} * bytes_per_page_;
}

void HostBackend::copy_page(PageId dst, PageId src) {
  if (dst == src) return;
  std::memcpy(page_address(dst), page_address(src), bytes_per_page_);
}

std::unique_ptr<PageBackend> make_accounting_backend() {
  return std::make_unique<AccountingBackend>();
}
std::unique_ptr<PageBackend> make_host_backend() { return std::make_unique<HostBackend>(); }

}  // namespace radixkv
