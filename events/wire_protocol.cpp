#include "events/wire_protocol.h"

namespace radixkv::events {

std::string encode_seq(int64_t seq) {
  const auto value = static_cast<uint64_t>(seq);
  std::string bytes(kSeqBytes, '\0');
  for (size_t i = 0; i < kSeqBytes; ++i) {
    bytes[i] = static_cast<char>((value >> (8 * (kSeqBytes - 1 - i))) & 0xff);
  }
  return bytes;
}

std::optional<int64_t> decode_seq(std::string_view frame) {
  if (frame.size() != kSeqBytes) return std::nullopt;
  uint64_t value = 0;
  for (char byte : frame) value = (value << 8) | static_cast<unsigned char>(byte);
  return static_cast<int64_t>(value);
}

bool pub_endpoint_binds(std::string_view endpoint) {
  return endpoint.find('*') != std::string_view::npos ||
         endpoint.find("::") != std::string_view::npos || endpoint.starts_with("ipc://") ||
         endpoint.starts_with("inproc://");
}

}  // namespace radixkv::events
