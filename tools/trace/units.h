// Parsing of command-line numbers with units. Each parser throws UsageError with the reason only
// ("'lots' is not a count ..."); the command line adds the flag or config key it came from.
//
//   sizes:      a byte count with an optional unit: KiB MiB GiB TiB (powers of 2), KB MB GB TB
//               (powers of 10), B or none (bytes). The number may have a fraction or an exponent
//               ("1.5GiB", "1e9"); the result is rounded down to whole bytes.
//   counts:     a non-negative whole number, plain or in scientific notation ("3993", "1e6",
//               "2.5e3"), below 2^63.
//   reals:      a finite decimal number, optionally bounded.
//   thresholds: a fraction of a budget in (0, 1] ("0.95"), or a size with a unit ("38GiB").
//
// Sizes computed from these (tokens times bytes, pages times bytes) go through checked_mul, which
// refuses a product past 2^64 instead of wrapping.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace radixkv::tools {

// A bad command line: an unknown flag, a missing or malformed value, an impossible combination.
// The message names the flag. The CLI exits with status 2 on it.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

uint64_t parse_size(std::string_view text);
uint64_t parse_count(std::string_view text);
double parse_real(std::string_view text, double min, double max);

struct Threshold {
  bool is_size = false;
  double fraction = 0;  // when !is_size
  uint64_t bytes = 0;   // when is_size
};
Threshold parse_threshold(std::string_view text);

// a * b; std::overflow_error naming `what` when it does not fit 64 bits.
uint64_t checked_mul(uint64_t a, uint64_t b, std::string_view what);

// True when `text` ends in a byte unit (so a sweep value means bytes, not tokens).
bool has_byte_unit(std::string_view text);

// "8.00 GiB", "512 B": for reports.
std::string format_bytes(uint64_t bytes);

}  // namespace radixkv::tools
