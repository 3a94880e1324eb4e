// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014;
// the constants of Vigna's public-domain reference): one mixing step that every seeded generator
// and content hash of the project shares, so that a stream written down in one place (a trace's
// tokens, a benchmark's workload) is the same stream everywhere.
#pragma once

#include <cstdint>

namespace radixkv {

inline constexpr uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;

// The finaliser applied to x + gamma: a bijection of 64-bit words with good avalanche.
inline uint64_t splitmix64(uint64_t x) {
  x += kSplitMix64Gamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The generator: state advances by gamma, each output is the mix of the new state.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() {
    const uint64_t out = splitmix64(state_);
    state_ += kSplitMix64Gamma;
    return out;
  }

 private:
  uint64_t state_;
};

}  // namespace radixkv
