// A small strict JSON reader (RFC 8259): objects, arrays, numbers, strings, true, false, null.
//
// It exists because the trace readers need one and no JSON library is a dependency. Strict means:
// no comments, no trailing commas, no leading zeros, no NaN/Infinity, no control characters in
// strings, nothing but whitespace after the value. Errors throw JsonError with the byte offset of
// the problem, so a reader can turn it into "file:line:column: reason".
//
// Numbers keep their exactness: an integer literal (no fraction, no exponent) that fits in int64
// is kept as such, so block ids and token counts are never rounded through a double.
// Nesting is limited to kMaxJsonDepth levels so that hostile input cannot exhaust the stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace radixkv::tools {

inline constexpr int kMaxJsonDepth = 256;

class JsonError : public std::runtime_error {
 public:
  JsonError(std::size_t offset, const std::string& reason)
      : std::runtime_error(reason), offset_(offset) {}
  // Byte offset into the parsed text where the problem was found.
  std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  using Member = std::pair<std::string, JsonValue>;

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }
  // True for a number written as an integer literal that fits in int64.
  bool is_integer() const { return type_ == Type::kNumber && is_integer_; }

  bool as_bool() const { return bool_; }
  double as_double() const { return number_; }
  int64_t as_int() const { return integer_; }
  const std::string& as_string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<Member>& members() const { return members_; }
  // The member named `key` of an object, or nullptr (also for a non-object).
  const JsonValue* find(std::string_view key) const;
  // Byte offset of the value's first character in the parsed text.
  std::size_t offset() const { return offset_; }

  static const char* type_name(Type type);

 private:
  friend class JsonParser;

  Type type_ = Type::kNull;
  bool bool_ = false;
  bool is_integer_ = false;
  double number_ = 0.0;
  int64_t integer_ = 0;
  std::size_t offset_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<Member> members_;
};

// Parses exactly one JSON value (with optional surrounding whitespace); throws JsonError.
JsonValue parse_json(std::string_view text);

// 1-based line and column of a byte offset in `text`, for error messages.
struct TextPosition {
  std::size_t line = 1;
  std::size_t column = 1;
};
TextPosition position_of(std::string_view text, std::size_t offset);

}  // namespace radixkv::tools
