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

// Transparent huge pages (2 MiB) for the memory mimalloc maps from now on; process-wide, off by
// default. In a tree far larger than the caches, evicting a leaf touches a few lines scattered over
// hundreds of MB (its node, its page's refcount, a random slot of its parent's child table), and
// with 4 KiB pages each can also miss the TLB, which on a VM costs a two-level page walk. With
// huge pages BM_Evict at 10^6 leaves took 16% less time (bench/README.md). The price is first
// touch: on the VM that measured it, faulting in 64 MiB of huge pages took 2.3x as long as with
// 4 KiB pages. So this is for long-lived servers with large trees, not for a replay that builds its
// trees once (the replay tool leaves it off). Memory mimalloc already holds, and reserve()'s
// arenas, keep the pages they have. Returns false, changing nothing, when `on` cannot be had: the
// system has transparent huge pages "never", or a sanitizer build (the system allocator); true
// otherwise. Call it before building the trees it is meant for.
bool use_huge_pages(bool on);

// First touch. Each 4 KiB page of fresh memory costs a page fault when first written (1-2 us on
// the VMs radixkv is measured on), so a tree of 10^6 pages stops ~50,000 times to fault. reserve()
// maps `bytes` up front and gives them to mimalloc as an arena (mimalloc takes memory from its
// arenas before asking the system), and a thread of its own faults them in ahead of use, about
// kReserveLead bytes ahead of the bytes allocated and not yet released, so the threads that build
// trees find their memory already there, and memory nobody asks for is not faulted in at all.
// For programs that know they are about to build large trees and have a core to spare (the
// replay tool): the mapping is the process's until it ends (mimalloc never gives an arena back),
// so the reservation only grows: a call for no more than the process has reserved already does
// nothing. Best effort: false when nothing was set aside (the system refused the mapping, which
// then leaves later allocations to fail as they would have; mimalloc has no room for another
// arena; a sanitizer build, which uses the system allocator); true when at least `bytes` are
// reserved. Thread-safe.
inline constexpr std::size_t kReserveLead = std::size_t{16} << 20;
enum class FaultIn { kAhead, kNow };  // kNow: all of it before returning (tests)
bool reserve(std::size_t bytes, FaultIn when = FaultIn::kAhead);
// Bytes reserve() has set aside in this process so far.
std::size_t reserved_bytes() noexcept;

}  // namespace radixkv::heap
