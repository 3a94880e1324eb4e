#include "kv_store/heap.h"

#include <new>

#ifdef RADIXKV_SYSTEM_MALLOC
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#else
#include <mimalloc.h>

#include <cstdlib>
#endif

namespace radixkv::heap {

namespace {

void* checked(void* memory, std::size_t bytes) {
  if (memory == nullptr && bytes != 0) throw std::bad_alloc();
  return memory;
}

}  // namespace

#ifdef RADIXKV_SYSTEM_MALLOC

void* allocate(std::size_t bytes) { return checked(std::malloc(bytes), bytes); }
void* allocate_zeroed(std::size_t count, std::size_t size) {
  return checked(std::calloc(count, size), count * size);
}
void* allocate_aligned_zeroed(std::size_t bytes, std::size_t alignment) {
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* memory = checked(std::aligned_alloc(alignment, rounded), rounded);
  if (memory != nullptr) std::memset(memory, 0, rounded);
  return memory;
}
void release(void* memory) noexcept { std::free(memory); }
std::size_t usable_size(const void* memory) noexcept {
  return memory ? malloc_usable_size(const_cast<void*>(memory)) : 0;
}
std::string_view allocator_name() noexcept { return "system"; }
bool large_os_pages_enabled() noexcept { return false; }

#else

namespace {

// Large OS pages (2 MiB) for radixkv's metadata, unless the user set MIMALLOC_LARGE_OS_PAGES
// either way. A large tree is hundreds of MB of small blocks touched in no order (eviction visits
// nodes, page arrays and child-table slots all over it): with 4 KiB pages nearly every such
// visit also misses the TLB, and building the tree takes one page fault per 4 KiB. mimalloc asks
// the kernel for transparent huge pages (madvise) on the segments it maps from then on; where the
// kernel gives none, nothing changes. Set before the first allocation of the process's radixkv
// code (this library is loaded, and this runs, before any of it). BM_Evict at 10^6 leaves:
// 17.7 -> 12.2 us per 64 pages (bench/README.md).
const bool large_os_pages = [] {
  if (std::getenv("MIMALLOC_LARGE_OS_PAGES") == nullptr) {
    mi_option_enable(mi_option_large_os_pages);
  }
  return mi_option_is_enabled(mi_option_large_os_pages);
}();

}  // namespace

bool large_os_pages_enabled() noexcept { return large_os_pages; }

void* allocate(std::size_t bytes) { return checked(mi_malloc(bytes), bytes); }
void* allocate_zeroed(std::size_t count, std::size_t size) {
  return checked(mi_calloc(count, size), count * size);
}
void* allocate_aligned_zeroed(std::size_t bytes, std::size_t alignment) {
  return checked(mi_zalloc_aligned(bytes, alignment), bytes);
}
void release(void* memory) noexcept { mi_free(memory); }
std::size_t usable_size(const void* memory) noexcept { return mi_usable_size(memory); }
std::string_view allocator_name() noexcept { return "mimalloc"; }

#endif

}  // namespace radixkv::heap
