// The page copy kernel behind CudaBackend::copy_pages and the zero-copy gather/scatter.
//
// One launch copies a whole batch: the grid's x dimension walks the batch (one page per x), its y
// dimension splits a page into chunks when the batch is too short to fill the GPU, and each
// thread strides through its chunk. Words are 16 bytes when every address and the page size allow
// it, else 4, else 1.
// Only built with CUDA (RADIXKV_HAVE_CUDA). The per-thread loop and the grid shape are plain
// functions here so that tests check them on the host, without a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#if defined(__CUDACC__)
#define RADIXKV_HOST_DEVICE __host__ __device__
#else
#define RADIXKV_HOST_DEVICE
#endif
// Host compilers do not know the pragma (and unroll constant loops anyway).
#if defined(__CUDA_ARCH__)
#define RADIXKV_UNROLL _Pragma("unroll")
#else
#define RADIXKV_UNROLL
#endif

namespace radixkv {

inline constexpr uint32_t kCopyThreads = 256;
// Loads in flight per thread before their stores: the kernel cannot prove that pages do not
// overlap, so without this each thread would wait for one load at a time.
inline constexpr int kCopyUnroll = 4;
inline constexpr uint32_t kMaxCopyChunks = 65535;           // gridDim.y limit
inline constexpr uint32_t kMaxPagesPerLaunch = 0x7fffffff;  // gridDim.x limit
// Enough blocks to fill a multiprocessor (2048 resident threads = 8 blocks of 256).
inline constexpr int kCopyBlocksPerMultiprocessor = 8;

// Addresses the kernel dereferences: device memory, or pinned host memory mapped for the device.
struct CopyAddresses {
  void* dst;
  const void* src;
};

// What one thread does: copies words first, first + stride, first + 2 * stride, ... below
// `words`, kCopyUnroll loads before their stores.
template <typename Word>
RADIXKV_HOST_DEVICE inline void copy_thread_words(const Word* __restrict__ src,
                                                  Word* __restrict__ dst, uint64_t words,
                                                  uint64_t first, uint64_t stride) {
  uint64_t i = first;
  for (; i + (kCopyUnroll - 1) * stride < words; i += kCopyUnroll * stride) {
    Word w[kCopyUnroll];
    RADIXKV_UNROLL
    for (int k = 0; k < kCopyUnroll; ++k) w[k] = src[i + k * stride];
    RADIXKV_UNROLL
    for (int k = 0; k < kCopyUnroll; ++k) dst[i + k * stride] = w[k];
  }
  for (; i < words; i += stride) dst[i] = src[i];
}

// Chunks per page (gridDim.y) for a launch of `pages` pages of `words` words: enough blocks to
// fill every multiprocessor, but never a chunk whose threads would all find nothing to copy, and
// within the grid limit. At least 1.
inline uint32_t copy_chunks_per_page(uint32_t pages, uint64_t words, int multiprocessors) {
  const uint64_t blocks_wanted =
      uint64_t(std::max(multiprocessors, 1)) * kCopyBlocksPerMultiprocessor;
  const uint64_t useful = std::max<uint64_t>((words + kCopyThreads - 1) / kCopyThreads, 1);
  const uint64_t wanted = (blocks_wanted + std::max(pages, 1u) - 1) / std::max(pages, 1u);
  return static_cast<uint32_t>(
      std::clamp<uint64_t>(wanted, 1, std::min<uint64_t>(useful, kMaxCopyChunks)));
}

// Enqueues on `stream` the copy of `bytes` bytes for each of the `count` address pairs stored at
// `device_pairs` (memory the device can read; it must stay valid until the kernel has run).
// `min_word_alignment` is the largest power of two (at most 16) that divides every address and
// `bytes`; the caller knows it without reading the pairs back. `multiprocessors` sizes the grid.
// Does nothing for count == 0 or bytes == 0. Throws CudaError if the launch fails.
void launch_copy_kernel(const CopyAddresses* device_pairs, uint32_t count, uint64_t bytes,
                        uint32_t min_word_alignment, int multiprocessors, cudaStream_t stream);

}  // namespace radixkv
