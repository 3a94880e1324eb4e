// Heap allocation for radixkv's own metadata (trie nodes, edge arrays, child tables, host arenas).
//
// Normal builds use mimalloc. Sanitizer builds (RADIXKV_SYSTEM_MALLOC, set by RADIXKV_SANITIZE) use
// the system allocator instead: ASan and TSan instrument malloc/free, whereas mimalloc recycles
// blocks where ASan cannot see a use after free and hands memory between threads in ways TSan
// reports as races.
#pragma once

#include <cstddef>

namespace radixkv::heap {

// Each throws std::bad_alloc when the memory is not there (never returns nullptr for bytes > 0).
void* allocate(std::size_t bytes);
void* allocate_zeroed(std::size_t count, std::size_t size);
void* allocate_aligned_zeroed(std::size_t bytes, std::size_t alignment);
void release(void* memory) noexcept;
// Bytes the allocator really set aside for `memory` (>= what was asked): metadata is measured
// with this, not estimated.
std::size_t usable_size(const void* memory) noexcept;

}  // namespace radixkv::heap
