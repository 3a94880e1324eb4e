#include "kv_store/heap.h"

#include <new>

#ifdef RADIXKV_SYSTEM_MALLOC
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#else
#include <mimalloc.h>
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

#else

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
