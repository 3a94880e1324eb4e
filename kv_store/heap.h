// Heap allocation for radixkv's own metadata (trie nodes, edge arrays, child tables, host arenas).
//
// Normal builds use mimalloc, through its explicit API only (mi_malloc, mi_free, ...): the host
// process keeps its own malloc and operator new. Debian's libmimalloc.so also defines malloc and
// operator new, and would replace them for the whole process if a program listed it among its
// direct dependencies; so only this file calls mimalloc, and it is built as a shared library of
// its own (libradixkv_heap, kv_store/CMakeLists.txt). A program then loads mimalloc one level
// below the C library, whose malloc it keeps (tests/test_host_allocator.cpp and
// scripts/check-install.sh check it in programs linked the way a consumer links radixkv).
//
// Threads: mimalloc's default API is thread-safe. Each thread allocates from its own thread-local
// heap and memory may be freed from any thread, so a runtime created on one thread and driven
// from others (SharedRuntime's shards, under their locks) needs nothing more. (A heap made with
// mi_heap_new would allow allocation only from the thread that made it.)
//
// Sanitizer builds (RADIXKV_SYSTEM_MALLOC, set by RADIXKV_SANITIZE) use the system allocator
// instead: ASan and TSan instrument malloc/free, whereas mimalloc recycles blocks where ASan cannot
// see a use after free and hands memory between threads in ways TSan reports as races.
#pragma once

#include <cstddef>
#include <string_view>

namespace radixkv::heap {

// Each throws std::bad_alloc when the memory is not there (never returns nullptr for bytes > 0).
void* allocate(std::size_t bytes);
void* allocate_zeroed(std::size_t count, std::size_t size);
void* allocate_aligned_zeroed(std::size_t bytes, std::size_t alignment);
void release(void* memory) noexcept;
// Bytes the allocator really set aside for `memory` (>= what was asked): metadata is measured
// with this, not estimated.
std::size_t usable_size(const void* memory) noexcept;
// "mimalloc" or "system" (sanitizer builds).
std::string_view allocator_name() noexcept;

}  // namespace radixkv::heap
