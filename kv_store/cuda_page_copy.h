// The page copy kernel behind CudaBackend::copy_pages and the zero-copy gather/scatter.
//
// One launch copies a whole batch: the grid's x dimension walks the batch (one page per x), its y
// dimension splits a page into chunks when the batch is too short to fill the GPU, and each
// thread strides through its chunk. Words are 16 bytes when every address and the page size allow
// it, else 4, else 1.
// Only built with CUDA (RADIXKV_HAVE_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace radixkv {

// Addresses the kernel dereferences: device memory, or pinned host memory mapped for the device.
struct CopyAddresses {
  void* dst;
  const void* src;
};

// Enqueues on `stream` the copy of `bytes` bytes for each of the `count` address pairs stored at
// `device_pairs` (memory the device can read; it must stay valid until the kernel has run).
// `min_word_alignment` is the largest power of two (at most 16) that divides every address and
// `bytes`; the caller knows it without reading the pairs back. `multiprocessors` sizes the grid.
// Does nothing for count == 0 or bytes == 0. Throws CudaError if the launch fails.
void launch_copy_kernel(const CopyAddresses* device_pairs, uint32_t count, uint64_t bytes,
                        uint32_t min_word_alignment, int multiprocessors, cudaStream_t stream);

}  // namespace radixkv
