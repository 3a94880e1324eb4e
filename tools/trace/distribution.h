// A distribution of non-negative numbers, written on the command line as:
//   N                    always N (also "fixed:N")
//   uniform:A:B          uniform in [A, B]
//   exp:MEAN             exponential with that mean
//   lognormal:MEAN:SIGMA log-normal with that mean and log-space standard deviation SIGMA
// Lengths drawn from it are rounded to whole tokens and clamped to at least a minimum.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tools/trace/random.h"

namespace radixkv::tools {

class Distribution {
 public:
  enum class Kind { kFixed, kUniform, kExponential, kLogNormal };

  // Throws UsageError naming `flag` when the text is not one of the forms above.
  static Distribution parse(std::string_view text, std::string_view flag);
  static Distribution fixed(double value) { return {Kind::kFixed, value, 0}; }

  double sample(Rng& rng) const;
  // sample() rounded to a whole number, at least `min`.
  uint32_t sample_count(Rng& rng, uint32_t min) const;
  double mean() const;
  std::string to_string() const;

 private:
  Distribution(Kind kind, double a, double b) : kind_(kind), a_(a), b_(b) {}

  Kind kind_;
  double a_;
  double b_;
};

}  // namespace radixkv::tools
