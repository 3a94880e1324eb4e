// What the parts of radixkv_gpu_check share: options, random page contents, byte checks, labels.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/splitmix64.h"

namespace radixkv::gpu_check {

struct Options {
  uint64_t arena_mib = 1024;
  int reps = 10;
};

// SplitMix64: fast enough to refill a GiB between checks.
inline void fill_random(std::byte* data, uint64_t bytes, uint64_t seed) {
  SplitMix64 stream(seed);
  for (uint64_t i = 0; i < bytes; i += 8) {
    const uint64_t z = stream.next();
    std::memcpy(data + i, &z, std::min<uint64_t>(8, bytes - i));
  }
}

class CheckFailed : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void expect_equal(const std::byte* got, const std::byte* want, uint64_t bytes,
                         uint64_t page_bytes, const std::string& what) {
  if (std::memcmp(got, want, bytes) == 0) return;
  uint64_t i = 0;
  while (got[i] == want[i]) ++i;
  throw CheckFailed(
      fmt::format("{}: wrong byte at offset {} (page slot {}, byte {}): got {:#04x}, "
                  "want {:#04x}",
                  what, i, i / page_bytes, i % page_bytes, std::to_integer<int>(got[i]),
                  std::to_integer<int>(want[i])));
}

inline std::string size_label(uint64_t bytes) {
  return bytes % (1ull << 20) == 0 ? fmt::format("{} MiB", bytes >> 20)
                                   : fmt::format("{} KiB", bytes >> 10);
}

// The median of some timings (the list is reordered).
inline double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// The tier copier part (gpu_check_copier.cpp): checks make_page_copier's CUDA copier on random
// pages both ways, then prints its D2H and H2D bandwidth beside plain cudaMemcpy. Throws
// CheckFailed at the first wrong byte.
void run_copier_check(const Options& options);

}  // namespace radixkv::gpu_check
