#include "tools/replay/json_writer.h"

#include <fmt/format.h>

#include <cmath>

namespace radixkv::tools {

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void JsonObjectWriter::key(std::string_view key) {
  if (text_.size() > 1) text_ += ',';
  text_ += json_quote(key);
  text_ += ':';
}

JsonObjectWriter& JsonObjectWriter::add(std::string_view k, std::string_view value) {
  key(k);
  text_ += json_quote(value);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::add(std::string_view k, uint64_t value) {
  key(k);
  text_ += fmt::format("{}", value);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::add(std::string_view k, double value) {
  key(k);
  text_ += std::isfinite(value) ? fmt::format("{}", value) : "null";
  return *this;
}

JsonObjectWriter& JsonObjectWriter::add(std::string_view k, bool value) {
  key(k);
  text_ += value ? "true" : "false";
  return *this;
}

JsonObjectWriter& JsonObjectWriter::add_raw(std::string_view k, std::string_view json) {
  key(k);
  text_ += json;
  return *this;
}

}  // namespace radixkv::tools
