// Helpers shared by the trace readers (not part of the library's interface).
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tools/trace/json_reader.h"
#include "tools/trace/trace.h"

namespace radixkv::tools::detail {

std::string read_file(const std::filesystem::path& path);

// A record's problem, without file and line: thrown by the field helpers below.
class RecordError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

inline const JsonValue& require_field(const JsonValue& object, std::string_view key) {
  const JsonValue* value = object.find(key);
  if (value == nullptr) throw RecordError(fmt::format("missing field \"{}\"", key));
  return *value;
}

// A whole number in [min, max].
inline int64_t integer_value(const JsonValue& value, std::string_view what, int64_t min,
                             int64_t max) {
  if (!value.is_integer()) {
    throw RecordError(
        fmt::format("{} must be a whole number, got {}", what, JsonValue::type_name(value.type())));
  }
  if (value.as_int() < min || value.as_int() > max) {
    throw RecordError(fmt::format("{} is {}, outside [{}, {}]", what, value.as_int(), min, max));
  }
  return value.as_int();
}

inline int64_t integer_field(const JsonValue& object, std::string_view key, int64_t min,
                             int64_t max) {
  return integer_value(require_field(object, key), fmt::format("\"{}\"", key), min, max);
}

// A finite number that is not negative.
inline double time_field(const JsonValue& object, std::string_view key) {
  const JsonValue& value = require_field(object, key);
  if (!value.is_number()) {
    throw RecordError(
        fmt::format("\"{}\" must be a number, got {}", key, JsonValue::type_name(value.type())));
  }
  if (!(value.as_double() >= 0.0)) {
    throw RecordError(fmt::format("\"{}\" is {}, which is negative", key, value.as_double()));
  }
  return value.as_double();
}

inline const JsonValue& array_field(const JsonValue& object, std::string_view key) {
  const JsonValue& value = require_field(object, key);
  if (!value.is_array()) {
    throw RecordError(
        fmt::format("\"{}\" must be an array, got {}", key, JsonValue::type_name(value.type())));
  }
  return value;
}

// Calls fn(record, line_number) for each non-blank line parsed as a JSON object; turns errors into
// TraceError(file, line, reason), or counts and skips them under skip_bad.
template <typename Fn>
void for_each_json_line(std::string_view text, const std::string& source, bool skip_bad,
                        uint64_t& skipped, Fn&& fn) {
  uint64_t line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line.ends_with('\r')) line.remove_suffix(1);
    std::string reason;
    try {
      const JsonValue record = parse_json(line);
      if (!record.is_object()) {
        throw RecordError(
            fmt::format("expected a JSON object, got {}", JsonValue::type_name(record.type())));
      }
      fn(record, line_number);
      continue;
    } catch (const JsonError& e) {
      reason = fmt::format("column {}: invalid JSON: {}", e.offset() + 1, e.what());
    } catch (const std::invalid_argument& e) {
      reason = e.what();
    }
    if (!skip_bad) throw TraceError(source, line_number, reason);
    ++skipped;
  }
}

}  // namespace radixkv::tools::detail
