// Counts every call of the global operator new made by the bench binary, and the bytes live
// through it (by malloc_usable_size). alloc_counter.cpp replaces the global operators new and
// delete, so linking it into a binary is what turns the counting on.
#pragma once

#include <cstdint>

namespace radixkv::bench {

struct AllocCounts {
  uint64_t calls = 0;      // operator new calls since the start
  int64_t live_bytes = 0;  // usable bytes allocated and not yet freed
};

AllocCounts alloc_counts();

}  // namespace radixkv::bench
