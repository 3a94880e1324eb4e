// A minimal JSON object writer for reports: keys in insertion order, strings escaped, doubles in
// their shortest round-trip form (non-finite ones as null, which JSON lacks a literal for).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace radixkv::tools {

std::string json_quote(std::string_view text);

class JsonObjectWriter {
 public:
  JsonObjectWriter& add(std::string_view key, std::string_view value);
  JsonObjectWriter& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  JsonObjectWriter& add(std::string_view key, uint64_t value);
  JsonObjectWriter& add(std::string_view key, double value);
  JsonObjectWriter& add(std::string_view key, bool value);
  // `json` must already be a JSON value (an object or array written by other code).
  JsonObjectWriter& add_raw(std::string_view key, std::string_view json);
  std::string str() const { return text_ + "}"; }

 private:
  void key(std::string_view key);
  std::string text_ = "{";
};

}  // namespace radixkv::tools
