// Parsing of command-line numbers with units, each error naming the flag it came from.
//
//   sizes:  a byte count with an optional unit: KiB MiB GiB TiB (powers of 2), KB MB GB TB
//           (powers of 10), B or none (bytes). The number may have a fraction or an exponent
//           ("1.5GiB", "1e9"); the result is rounded down to whole bytes.
//   counts: a non-negative whole number, plain or in scientific notation ("3993", "1e6", "2.5e3").
//   reals:  a finite decimal number, optionally bounded.
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

uint64_t parse_size(std::string_view text, std::string_view flag);
uint64_t parse_count(std::string_view text, std::string_view flag);
double parse_real(std::string_view text, std::string_view flag, double min, double max);

// True when `text` ends in a byte unit (so a sweep value means bytes, not tokens).
bool has_byte_unit(std::string_view text);

// "8.00 GiB", "512 B": for reports.
std::string format_bytes(uint64_t bytes);

}  // namespace radixkv::tools
