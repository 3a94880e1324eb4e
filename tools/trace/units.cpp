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

uint64_t parse_size(std::string_view text, std::string_view flag) {
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
        "{}: '{}' is not a size (write bytes with a unit, e.g. 512MiB, 8GiB, 40GB, 1e9)", flag,
        text));
  }
  const double bytes = std::floor(value * factor);
  if (bytes < 0) throw UsageError(fmt::format("{}: size '{}' is negative", flag, text));
  if (bytes >= 1.8e19) throw UsageError(fmt::format("{}: size '{}' is too large", flag, text));
  return static_cast<uint64_t>(bytes);
}

uint64_t parse_count(std::string_view text, std::string_view flag) {
  double value = 0.0;
  if (!read_number(text, value)) {
    throw UsageError(fmt::format(
        "{}: '{}' is not a count (write a whole number such as 3993 or 1e6)", flag, text));
  }
  if (value < 0) throw UsageError(fmt::format("{}: count '{}' is negative", flag, text));
  if (value != std::floor(value)) {
    throw UsageError(fmt::format("{}: count '{}' is not a whole number", flag, text));
  }
  if (value >= 9.2e18) throw UsageError(fmt::format("{}: count '{}' is too large", flag, text));
  return static_cast<uint64_t>(value);
}

double parse_real(std::string_view text, std::string_view flag, double min, double max) {
  double value = 0.0;
  if (!read_number(text, value)) {
    throw UsageError(fmt::format("{}: '{}' is not a number", flag, text));
  }
  if (value < min || value > max) {
    throw UsageError(fmt::format("{}: {} is outside [{}, {}]", flag, text, min, max));
  }
  return value;
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
