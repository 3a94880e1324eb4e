#include "kv_store/cuda_page_copy.h"

#include <algorithm>
#include <cstdint>

#include "kv_store/cuda_backend.h"

namespace radixkv {
namespace {

constexpr uint32_t kThreads = 256;
// Loads in flight per thread before the stores: the pointers may alias as far as the compiler
// knows, so without this each thread would wait for one load at a time.
constexpr int kUnroll = 4;
constexpr uint32_t kMaxGridY = 65535;
constexpr uint32_t kMaxGridX = 0x7fffffff;
// Enough blocks to fill every multiprocessor (2048 resident threads = 8 blocks of 256) even when
// the batch is a single page.
constexpr int kBlocksPerMultiprocessor = 8;

template <typename Word>
__global__ void __launch_bounds__(kThreads)
    copy_kernel(const CopyAddresses* pairs, uint64_t words) {
  const CopyAddresses pair = pairs[blockIdx.x];
  const Word* __restrict__ src = static_cast<const Word*>(pair.src);
  Word* __restrict__ dst = static_cast<Word*>(pair.dst);
  const uint64_t stride = uint64_t{blockDim.x} * gridDim.y;
  uint64_t i = uint64_t{blockIdx.y} * blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < words; i += kUnroll * stride) {
    Word w[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) w[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) dst[i + k * stride] = w[k];
  }
  for (; i < words; i += stride) dst[i] = src[i];
}

template <typename Word>
void launch_words(const CopyAddresses* pairs, uint32_t count, uint64_t bytes, int multiprocessors,
                  cudaStream_t stream) {
  const uint64_t words = bytes / sizeof(Word);
  const uint64_t blocks_wanted = uint64_t(std::max(multiprocessors, 1)) * kBlocksPerMultiprocessor;
  const uint64_t chunks_useful = (words + kThreads - 1) / kThreads;  // more would idle threads
  for (uint32_t first = 0; first < count;) {
    const uint32_t batch = std::min(count - first, kMaxGridX);
    const uint64_t chunks = std::clamp<uint64_t>((blocks_wanted + batch - 1) / batch, 1,
                                                 std::min<uint64_t>(chunks_useful, kMaxGridY));
    const dim3 grid(batch, static_cast<uint32_t>(chunks));
    copy_kernel<Word><<<grid, kThreads, 0, stream>>>(pairs + first, words);
    RADIXKV_CUDA_CHECK(cudaGetLastError());
    first += batch;
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
