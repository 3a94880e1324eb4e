// How a cached page is named and stored in the remote tier.
//
// Key:   "<prefix>:<layout id, 16 hex digits>:<page hash, 32 hex digits (high half first)>"
//        The page hash is radix/page_hash.h's chain hash, which already covers the namespace and
//        every token from the root through the page: two tenants (namespaces) never share a key,
//        the deployment prefix keeps deployments apart on one Redis, and the layout id keeps
//        models (their names and KV shapes) apart.
// Value: a 56-byte header, the page's tokens, then the payload (the page's bytes, or filler):
// clang-format off
//          0  magic "RKVP"                  28  parent page's hash (16 bytes, low half first)
//          4  format version (u16) = 1      44  payload bytes (u64)
//          6  zero (u16)                    52  reserved, zero (u32)
//          8  layout id (u64)               56  the page's tokens (int32 each)
//         16  page tokens (u32)             ..  payload
//         20  XXH3-64 of the payload (u64)
// clang-format on
//        all little-endian. A reader checks every field against what it expects (the layout, the
//        parent it chained from, the tokens of its prompt, the payload's size and checksum):
//        anything else is a miss, never served.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kv_store/kv_layout.h"
#include "radix/page_hash.h"

namespace radixkv::remote {

inline constexpr std::size_t kPageHeaderBytes = 56;
inline constexpr uint16_t kPageFormatVersion = 1;

// kv_layout_id() (kv_store/kv_layout.h): XXH3-64 of "radixkv-kv-layout-v1", the layout's five
// fields (u32 LE each) and the model's name: KV of one model is never served to another, even of
// the same shape.
uint64_t layout_id(const KvLayout& layout, std::string_view model);

std::string page_key(std::string_view prefix, uint64_t layout, const PageHash& hash);

std::string encode_page_value(uint64_t layout, const PageHash& parent,
                              std::span<const TokenId> tokens, std::span<const std::byte> payload);
// The same with `filler_bytes` zero bytes as the payload (replay: no real KV).
std::string encode_page_value(uint64_t layout, const PageHash& parent,
                              std::span<const TokenId> tokens, std::size_t filler_bytes);

enum class ValueCheck : uint8_t {
  kOk,
  kTruncated,  // shorter than its header and tokens say
  kMagic,
  kVersion,
  kLayout,
  kTokens,  // another page count or other tokens
  kParent,
  kSize,  // payload of another size than expected
  kChecksum,
};
std::string_view to_string(ValueCheck check);

struct ExpectedPage {
  uint64_t layout = 0;
  PageHash parent;
  std::span<const TokenId> tokens;
  // The payload size a page of this pool has; SIZE_MAX accepts any (a pool without bytes).
  std::size_t payload_bytes = SIZE_MAX;
};

// Checks `value` against `expected`; on kOk, `payload` views the payload inside `value`.
ValueCheck check_page_value(std::string_view value, const ExpectedPage& expected,
                            std::span<const std::byte>* payload = nullptr);

}  // namespace radixkv::remote
