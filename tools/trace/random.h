// Deterministic randomness for trace generation. The standard library's distributions are not
// specified bit for bit (libstdc++ and libc++ give different streams), so every draw here is
// written out: the same seed gives the same trace on every platform that rounds log/exp/cos the
// same way (all IEEE-754 libms we build with).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

#include "common/splitmix64.h"

namespace radixkv::tools {

class Rng {
 public:
  explicit Rng(uint64_t seed) : stream_(splitmix64(seed ^ 0x6A09E667F3BCC909ull)) {}

  uint64_t next() { return stream_.next(); }
  // Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n); n >= 1. The modulo bias is below 2^-40 for the n used here.
  uint64_t below(uint64_t n) { return next() % n; }
  bool chance(double p) { return uniform() < p; }
  double exponential(double mean) { return -mean * std::log1p(-uniform()); }
  double normal() {
    // Box-Muller; 1 - uniform() is in (0, 1], so the log is finite.
    const double r = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    return r * std::cos(2.0 * std::numbers::pi * uniform());
  }

 private:
  SplitMix64 stream_;
};

}  // namespace radixkv::tools
