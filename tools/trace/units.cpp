#include "tools/trace/units.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>

namespace radixkv::tools {

namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// Longest suffixes first so that "MiB" is not read as "B".
constexpr std::array kUnits = {
    Unit{"KiB", 1024.0},
    Unit{"MiB", 1024.0 * 1024},
    Unit{"GiB", 1024.0 * 1024 * 1024},
    Unit{"TiB", 1024.0 * 1024 * 1024 * 1024},
    Unit{"KB", 1e3},
    Unit{"MB", 1e6},
    Unit{"GB", 1e9},
    Unit{"TB", 1e12},
    Unit{"B", 1.0},
};

// A finite number written in full (from_chars accepts no leading '+', spaces or hex here).
bool read_number(std::string_view text, double& value) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(value);
}

}  // namespace

bool has_byte_unit(std::string_view text) {
  for (const Unit& unit : kUnits) {
    if (text.size() > unit.suffix.size() && text.ends_with(unit.suffix)) return true;
  }
  return false;
}

uint64_t parse_size(std::string_view text) {
  double factor = 1.0;
  std::string_view number = text;
  for (const Unit& unit : kUnits) {
    if (text.size() > unit.suffix.size() && text.ends_with(unit.suffix)) {
      factor = unit.factor;
      number = text.substr(0, text.size() - unit.suffix.size());
      break;
    }
  }
  double value = 0.0;
  if (!read_number(number, value)) {
    throw UsageError(fmt::format(
        "'{}' is not a size (write bytes with a unit, e.g. 512MiB, 8GiB, 40GB, 1e9)", text));
  }
  const double bytes = std::floor(value * factor);
  if (bytes < 0) throw UsageError(fmt::format("size '{}' is negative", text));
  // 2^64 is exactly representable; anything at or above it does not fit.
  if (bytes >= 0x1p64) throw UsageError(fmt::format("size '{}' is 2^64 bytes or more", text));
  return static_cast<uint64_t>(bytes);
}

uint64_t parse_count(std::string_view text) {
  double value = 0.0;
  if (!read_number(text, value)) {
    throw UsageError(
        fmt::format("'{}' is not a count (write a whole number such as 3993 or 1e6)", text));
  }
  if (value < 0) throw UsageError(fmt::format("count '{}' is negative", text));
  if (value != std::floor(value)) {
    throw UsageError(fmt::format("count '{}' is not a whole number", text));
  }
  if (value >= 0x1p63) throw UsageError(fmt::format("count '{}' is 2^63 or more", text));
  return static_cast<uint64_t>(value);
}

double parse_real(std::string_view text, double min, double max) {
  double value = 0.0;
  if (!read_number(text, value)) throw UsageError(fmt::format("'{}' is not a number", text));
  if (value < min || value > max) {
    throw UsageError(fmt::format("{} is outside [{}, {}]", text, min, max));
  }
  return value;
}

Threshold parse_threshold(std::string_view text) {
  Threshold threshold;
  if (has_byte_unit(text)) {
    threshold.is_size = true;
    threshold.bytes = parse_size(text);
    return threshold;
  }
  double value = 0.0;
  if (!read_number(text, value) || !(value > 0.0 && value <= 1.0)) {
    throw UsageError(fmt::format(
        "'{}' is neither a fraction of the budget in (0, 1] nor a size with a unit (e.g. 38GiB)",
        text));
  }
  threshold.fraction = value;
  return threshold;
}

uint64_t checked_mul(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw std::overflow_error(
        fmt::format("{}: {} x {} does not fit 64 bits (more than 1.8e19)", what, a, b));
  }
  return product;
}

std::string format_bytes(uint64_t bytes) {
  constexpr std::array kNames = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kNames.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.2f} {}", value, kNames[unit]);
}

}  // namespace radixkv::tools
