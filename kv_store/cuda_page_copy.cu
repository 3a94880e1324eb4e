#include "kv_store/cuda_page_copy.h"

#include <algorithm>
#include <cstdint>

#include "kv_store/cuda_backend.h"

namespace radixkv {
namespace {

template <typename Word>
__global__ void __launch_bounds__(kCopyThreads)
    copy_kernel(const CopyAddresses* pairs, uint64_t words) {
  const CopyAddresses pair = pairs[blockIdx.x];
  copy_thread_words(static_cast<const Word*>(pair.src), static_cast<Word*>(pair.dst), words,
                    uint64_t{blockIdx.y} * blockDim.x + threadIdx.x,
                    uint64_t{blockDim.x} * gridDim.y);
}

template <typename Word>
void launch_words(const CopyAddresses* pairs, uint32_t count, uint64_t bytes, int multiprocessors,
                  cudaStream_t stream) {
  const uint64_t words = bytes / sizeof(Word);
  for (uint32_t first = 0; first < count;) {
    const uint32_t pages = std::min(count - first, kMaxPagesPerLaunch);
    const dim3 grid(pages, copy_chunks_per_page(pages, words, multiprocessors));
    copy_kernel<Word><<<grid, kCopyThreads, 0, stream>>>(pairs + first, words);
    RADIXKV_CUDA_CHECK(cudaGetLastError());
    first += pages;
  }
}

}  // namespace

void launch_copy_kernel(const CopyAddresses* device_pairs, uint32_t count, uint64_t bytes,
                        uint32_t min_word_alignment, int multiprocessors, cudaStream_t stream) {
  if (count == 0 || bytes == 0) return;
  if (min_word_alignment % 16 == 0) {
    launch_words<uint4>(device_pairs, count, bytes, multiprocessors, stream);
  } else if (min_word_alignment % 4 == 0) {
    launch_words<uint32_t>(device_pairs, count, bytes, multiprocessors, stream);
  } else {
    launch_words<unsigned char>(device_pairs, count, bytes, multiprocessors, stream);
  }
}

}  // namespace radixkv
