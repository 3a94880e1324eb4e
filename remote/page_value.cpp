#include "remote/page_value.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>

namespace radixkv::remote {

namespace {

constexpr char kMagic[4] = {'R', 'K', 'V', 'P'};

template <typename T>
void put_le(std::string& out, std::size_t at, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[at + i] = static_cast<char>(static_cast<uint64_t>(value) >> (8 * i));
  }
}

template <typename T>
T get_le(std::string_view in, std::size_t at) {
  uint64_t value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= uint64_t{static_cast<unsigned char>(in[at + i])} << (8 * i);
  }
  return static_cast<T>(value);
}

std::string encode_header(uint64_t layout, const PageHash& parent, std::span<const TokenId> tokens,
                          std::size_t payload_bytes, uint64_t checksum) {
  std::string out(kPageHeaderBytes + tokens.size() * 4 + payload_bytes, '\0');
  std::memcpy(out.data(), kMagic, 4);
  put_le<uint16_t>(out, 4, kPageFormatVersion);
  put_le<uint64_t>(out, 8, layout);
  put_le<uint32_t>(out, 16, static_cast<uint32_t>(tokens.size()));
  put_le<uint64_t>(out, 20, checksum);
  put_le<uint64_t>(out, 28, parent.low);
  put_le<uint64_t>(out, 36, parent.high);
  put_le<uint64_t>(out, 44, payload_bytes);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    put_le<uint32_t>(out, kPageHeaderBytes + 4 * i, static_cast<uint32_t>(tokens[i]));
  }
  return out;
}

}  // namespace

uint64_t layout_id(const KvLayout& layout, std::string_view model) {
  return kv_layout_id(layout, model);
}

std::string page_key(std::string_view prefix, uint64_t layout, const PageHash& hash) {
  return fmt::format("{}:{:016x}:{:016x}{:016x}", prefix, layout, hash.high, hash.low);
}

std::string encode_page_value(uint64_t layout, const PageHash& parent,
                              std::span<const TokenId> tokens, std::span<const std::byte> payload) {
  std::string out = encode_header(layout, parent, tokens, payload.size(),
                                  XXH3_64bits(payload.data(), payload.size()));
  if (!payload.empty()) {
    std::memcpy(out.data() + kPageHeaderBytes + tokens.size() * 4, payload.data(), payload.size());
  }
  return out;
}

std::string encode_page_value(uint64_t layout, const PageHash& parent,
                              std::span<const TokenId> tokens, std::size_t filler_bytes) {
  const std::string zeros(filler_bytes, '\0');  // the checksum of the filler
  return encode_header(layout, parent, tokens, filler_bytes,
                       XXH3_64bits(zeros.data(), zeros.size()));
}

std::string_view to_string(ValueCheck check) {
  switch (check) {
    case ValueCheck::kOk:
      return "ok";
    case ValueCheck::kTruncated:
      return "truncated";
    case ValueCheck::kMagic:
      return "bad magic";
    case ValueCheck::kVersion:
      return "unknown format version";
    case ValueCheck::kLayout:
      return "another KV layout";
    case ValueCheck::kTokens:
      return "other tokens";
    case ValueCheck::kParent:
      return "another parent page";
    case ValueCheck::kSize:
      return "payload of another size";
    case ValueCheck::kChecksum:
      return "payload checksum mismatch";
  }
  return "unknown";
}

ValueCheck check_page_value(std::string_view value, const ExpectedPage& expected,
                            std::span<const std::byte>* payload) {
  if (value.size() < kPageHeaderBytes) return ValueCheck::kTruncated;
  if (std::memcmp(value.data(), kMagic, 4) != 0) return ValueCheck::kMagic;
  if (get_le<uint16_t>(value, 4) != kPageFormatVersion) return ValueCheck::kVersion;
  if (get_le<uint64_t>(value, 8) != expected.layout) return ValueCheck::kLayout;
  const uint32_t tokens = get_le<uint32_t>(value, 16);
  if (tokens != expected.tokens.size()) return ValueCheck::kTokens;
  const uint64_t payload_bytes = get_le<uint64_t>(value, 44);
  const std::size_t payload_at = kPageHeaderBytes + std::size_t{tokens} * 4;
  if (value.size() < payload_at || value.size() - payload_at != payload_bytes) {
    return ValueCheck::kTruncated;
  }
  for (std::size_t i = 0; i < tokens; ++i) {
    if (static_cast<TokenId>(get_le<uint32_t>(value, kPageHeaderBytes + 4 * i)) !=
        expected.tokens[i]) {
      return ValueCheck::kTokens;
    }
  }
  const PageHash parent{get_le<uint64_t>(value, 28), get_le<uint64_t>(value, 36)};
  if (parent != expected.parent) return ValueCheck::kParent;
  if (expected.payload_bytes != SIZE_MAX && payload_bytes != expected.payload_bytes) {
    return ValueCheck::kSize;
  }
  const char* data = value.data() + payload_at;
  if (XXH3_64bits(data, payload_bytes) != get_le<uint64_t>(value, 20)) return ValueCheck::kChecksum;
  if (payload != nullptr) {
    *payload = {reinterpret_cast<const std::byte*>(data), static_cast<std::size_t>(payload_bytes)};
  }
  return ValueCheck::kOk;
}

}  // namespace radixkv::remote
