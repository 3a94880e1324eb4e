// Page contents for the backend tests: a page's bytes as a plain vector, and random fill from a
// seeded generator so a failing run repeats. Shared by test_page_backend.cpp (every backend) and
// test_page_backend_cuda.cpp (what only the CUDA backend has).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace radixkv::testing {

using Bytes = std::vector<std::byte>;

// `n` bytes from `rng`, eight at a time; the last word is cut short when n is not a multiple of 8.
inline Bytes random_bytes(std::mt19937_64& rng, uint64_t n) {
  Bytes bytes(n);
  for (uint64_t i = 0; i < n; i += 8) {
    const uint64_t word = rng();
    std::memcpy(bytes.data() + i, &word, std::min<uint64_t>(8, n - i));
  }
  return bytes;
}

}  // namespace radixkv::testing
