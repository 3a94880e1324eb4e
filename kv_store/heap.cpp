#include "kv_store/heap.h"

#include <new>

#ifdef RADIXKV_SYSTEM_MALLOC
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#else
#include <mimalloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
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
bool reserve(std::size_t, FaultIn) { return false; }
std::size_t reserved_bytes() noexcept { return 0; }
bool use_huge_pages(bool on) { return !on; }

#else

namespace {

// Bytes allocated and not yet released (by mi_usable_size), counted once reserve() has been
// called: what the fault-in thread stays ahead of. Each thread adds its changes once they reach a
// MiB either way, so that threads allocating at once do not share a cache line at every call.
constexpr int64_t kReportBytes = int64_t{1} << 20;
std::atomic<bool> counting{false};
std::atomic<int64_t> live{0};
thread_local int64_t unreported = 0;

void count(const void* memory, int64_t sign) noexcept {
  if (memory == nullptr || !counting.load(std::memory_order_relaxed)) return;
  unreported += sign * static_cast<int64_t>(mi_usable_size(memory));
  if (unreported < kReportBytes && unreported > -kReportBytes) return;
  live.fetch_add(unreported, std::memory_order_relaxed);
  live.notify_one();
  unreported = 0;
}

// MADV_POPULATE_WRITE (Linux 5.14): faults a range in, writable, with no fault per page; pages
// already there are left as they are, so it is safe on memory mimalloc has started to use.
constexpr std::size_t kFaultStep = std::size_t{2} << 20;
// mimalloc finds a block's segment by masking its address, so an arena must start on a segment
// boundary; 64 MiB is a multiple of the segment size of every mimalloc 2.x.
constexpr std::size_t kArenaAlign = std::size_t{64} << 20;

// Faults [start, start + size) in, front to back (mimalloc fills an arena from its start), staying
// kReserveLead ahead of the bytes live beyond `base` (those live when it was reserved). What it has
// faulted in stays. Stops at the end or at the first refusal (out of memory, or a kernel without
// MADV_POPULATE_WRITE).
void fault_in(char* start, std::size_t size, int64_t base, FaultIn when) {
  std::size_t done = 0;
  while (done < size) {
    const int64_t seen = live.load(std::memory_order_relaxed);
    const auto grown = static_cast<std::size_t>(std::max<int64_t>(seen - base, 0));
    const std::size_t target = when == FaultIn::kNow ? size : std::min(size, grown + kReserveLead);
    for (; done < target; done += kFaultStep) {
      if (madvise(start + done, std::min(kFaultStep, size - done), MADV_POPULATE_WRITE) != 0)
        return;
    }
    if (done < size) live.wait(seen, std::memory_order_relaxed);
  }
}

std::mutex reserve_lock;
std::size_t reserved = 0;  // under reserve_lock

}  // namespace

bool reserve(std::size_t bytes, FaultIn when) {
  const std::lock_guard lock(reserve_lock);
  if (bytes <= reserved) return true;
  const std::size_t size = (bytes - reserved + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  // Not MAP_NORESERVE: the system counts the mapping now, so a size it cannot back is refused
  // here rather than when a page is first touched.
  void* mapped =
      mmap(nullptr, size + kArenaAlign, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return false;
  const auto address = reinterpret_cast<std::uintptr_t>(mapped);
  char* start = reinterpret_cast<char*>((address + kArenaAlign - 1) / kArenaAlign * kArenaAlign);
  // Fresh anonymous memory: committed as far as mimalloc is concerned, and zero.
  if (!mi_manage_os_memory(start, size, /*is_committed=*/true, /*is_large=*/false,
                           /*is_zero=*/true, /*numa_node=*/-1)) {
    munmap(mapped, size + kArenaAlign);
    return false;
  }
  reserved += size;
  counting.store(true, std::memory_order_relaxed);
  const int64_t base = live.load(std::memory_order_relaxed);
  if (when == FaultIn::kNow) {
    fault_in(start, size, base, when);
  } else {
    // It outlives no one it uses: the mapping is never unmapped, and the counter is a global.
    std::thread(fault_in, start, size, base, when).detach();
  }
  return true;
}

std::size_t reserved_bytes() noexcept {
  const std::lock_guard lock(reserve_lock);
  return reserved;
}

void* allocate(std::size_t bytes) {
  void* memory = checked(mi_malloc(bytes), bytes);
  count(memory, +1);
  return memory;
}
void* allocate_zeroed(std::size_t count_of, std::size_t size) {
  void* memory = checked(mi_calloc(count_of, size), count_of * size);
  count(memory, +1);
  return memory;
}
void* allocate_aligned_zeroed(std::size_t bytes, std::size_t alignment) {
  void* memory = checked(mi_zalloc_aligned(bytes, alignment), bytes);
  count(memory, +1);
  return memory;
}
void release(void* memory) noexcept {
  count(memory, -1);
  mi_free(memory);
}
std::size_t usable_size(const void* memory) noexcept { return mi_usable_size(memory); }
std::string_view allocator_name() noexcept { return "mimalloc"; }

bool use_huge_pages(bool on) {
  if (on) {
    // "always [madvise] never": the mode in brackets is the one in force.
    std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    if (!std::getline(file, modes) || modes.find("[never]") != std::string::npos) return false;
  }
  // mimalloc then asks for huge pages (madvise(MADV_HUGEPAGE)) on each segment it maps.
  mi_option_set_enabled(mi_option_large_os_pages, on);
  return true;
}

#endif

}  // namespace radixkv::heap
