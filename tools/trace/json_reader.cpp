#include "tools/trace/json_reader.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace radixkv::tools {

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const Member& member : members_) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

const char* JsonValue::type_name(Type type) {
  switch (type) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "a boolean";
    case Type::kNumber:
      return "a number";
    case Type::kString:
      return "a string";
    case Type::kArray:
      return "an array";
    case Type::kObject:
      return "an object";
  }
  return "?";
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  JsonValue parse_document() {
    JsonValue value;
    skip_space();
    parse_value(value, 0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const { throw JsonError(pos_, reason); }

  std::string describe_here() const {
    if (pos_ >= text_.size()) return "end of input";
    const char c = text_[pos_];
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
    }
    return fmt::format("'{}'", c);
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  void expect_literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) {
      fail(fmt::format("expected a JSON value, found {}", describe_here()));
    }
    pos_ += word.size();
  }

  void parse_value(JsonValue& out, int depth) {
    if (depth > kMaxJsonDepth) fail(fmt::format("nesting deeper than {} levels", kMaxJsonDepth));
    out.offset_ = pos_;
    if (pos_ >= text_.size()) fail("expected a JSON value, found end of input");
    switch (text_[pos_]) {
      case '{':
        parse_object(out, depth);
        return;
      case '[':
        parse_array(out, depth);
        return;
      case '"':
        out.type_ = JsonValue::Type::kString;
        parse_string(out.string_);
        return;
      case 't':
        expect_literal("true");
        out.type_ = JsonValue::Type::kBool;
        out.bool_ = true;
        return;
      case 'f':
        expect_literal("false");
        out.type_ = JsonValue::Type::kBool;
        return;
      case 'n':
        expect_literal("null");
        return;
      default:
        if (text_[pos_] == '-' || (text_[pos_] >= '0' && text_[pos_] <= '9')) {
          parse_number(out);
          return;
        }
        fail(fmt::format("expected a JSON value, found {}", describe_here()));
    }
  }

  void parse_object(JsonValue& out, int depth) {
    out.type_ = JsonValue::Type::kObject;
    ++pos_;  // '{'
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return;
    }
    while (true) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') {
        fail(fmt::format("expected a member name in quotes, found {}", describe_here()));
      }
      JsonValue::Member& member = out.members_.emplace_back();
      parse_string(member.first);
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ':') {
        fail(fmt::format("expected ':' after member name \"{}\", found {}", member.first,
                         describe_here()));
      }
      ++pos_;
      skip_space();
      parse_value(member.second, depth + 1);
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return;
      }
      fail(fmt::format("expected ',' or '}}' in an object, found {}", describe_here()));
    }
  }

  void parse_array(JsonValue& out, int depth) {
    out.type_ = JsonValue::Type::kArray;
    ++pos_;  // '['
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return;
    }
    while (true) {
      skip_space();
      parse_value(out.items_.emplace_back(), depth + 1);
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return;
      }
      fail(fmt::format("expected ',' or ']' in an array, found {}", describe_here()));
    }
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = hex_value(text_[pos_ + i]);
      if (digit < 0) fail("\\u escape needs four hex digits");
      code = code * 16 + static_cast<uint32_t>(digit);
    }
    pos_ += 4;
    return code;
  }

  static void append_utf8(std::string& out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  void parse_string(std::string& out) {
    ++pos_;  // opening quote
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        fail(fmt::format("control character {} inside a string", describe_here()));
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) fail("unterminated escape in a string");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t code = parse_hex4();
          if (code >= 0xD800 && code <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") fail("high surrogate without a low surrogate");
            pos_ += 2;
            const uint32_t low = parse_hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate without a low surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code <= 0xDFFF) {
            fail("lone low surrogate in a \\u escape");
          }
          append_utf8(out, code);
          break;
        }
        default:
          --pos_;
          fail(fmt::format("invalid escape \\{} in a string", e));
      }
    }
  }

  void parse_number(JsonValue& out) {
    const std::size_t start = pos_;
    auto digit_at = [&](std::size_t i) {
      return i < text_.size() && text_[i] >= '0' && text_[i] <= '9';
    };
    bool integral = true;
    if (text_[pos_] == '-') ++pos_;
    if (!digit_at(pos_)) fail("a number needs a digit after '-'");
    if (text_[pos_] == '0' && digit_at(pos_ + 1)) fail("numbers may not have leading zeros");
    while (digit_at(pos_)) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!digit_at(pos_)) fail("a number needs a digit after '.'");
      while (digit_at(pos_)) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!digit_at(pos_)) fail("a number needs a digit in its exponent");
      while (digit_at(pos_)) ++pos_;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    out.type_ = JsonValue::Type::kNumber;
    if (integral) {
      int64_t value = 0;
      const auto [ptr, ec] = std::from_chars(first, last, value);
      if (ec == std::errc() && ptr == last) {
        out.is_integer_ = true;
        out.integer_ = value;
        out.number_ = static_cast<double>(value);
        return;
      }
    }
    double value = 0.0;
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last || !std::isfinite(value)) {
      pos_ = start;
      fail("number out of range");
    }
    out.number_ = value;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

JsonValue parse_json(std::string_view text) { return JsonParser(text).parse_document(); }

TextPosition position_of(std::string_view text, std::size_t offset) {
  TextPosition position;
  const std::size_t end = std::min(offset, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++position.line;
      position.column = 1;
    } else {
      ++position.column;
    }
  }
  return position;
}

}  // namespace radixkv::tools
