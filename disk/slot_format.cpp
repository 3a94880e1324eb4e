#include "disk/slot_format.h"

#include <fmt/format.h>
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>
#if defined(__x86_64__)
// libxxhash's run-time dispatch to the widest vector unit the CPU has (AVX2, AVX-512): the same
// hashes, 3.5x the speed of its SSE2 default on a 2 MiB page here (bench/README.md, "The disk
// tier"). Every page's payload is hashed once written and once read.
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace radixkv::disk {

namespace {

constexpr char kMagic[4] = {'R', 'K', 'V', 'D'};
constexpr std::size_t kHeaderChecksumAt = 88;
constexpr uint16_t kFirstPageFlag = 1;

template <typename T>
void put_le(std::span<std::byte> out, std::size_t at, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[at + i] = static_cast<std::byte>(static_cast<uint64_t>(value) >> (8 * i));
  }
}

template <typename T>
T get_le(std::span<const std::byte> in, std::size_t at) {
  uint64_t value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= uint64_t{std::to_integer<uint8_t>(in[at + i])} << (8 * i);
  }
  return static_cast<T>(value);
}

// XXH3-64 of the header's bytes [0, 88) and `page_tokens` tokens.
uint64_t header_checksum(std::span<const std::byte> head, uint32_t page_tokens) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, head.data(), kHeaderChecksumAt);
  XXH3_64bits_update(&state, head.data() + kSlotHeaderBytes, std::size_t{4} * page_tokens);
  return XXH3_64bits_digest(&state);
}

}  // namespace

std::string_view to_string(SlotCheck check) {
  switch (check) {
    case SlotCheck::kOk:
      return "ok";
    case SlotCheck::kEmpty:
      return "empty";
    case SlotCheck::kMagic:
      return "not a radixkv page (magic)";
    case SlotCheck::kVersion:
      return "another format version";
    case SlotCheck::kLayout:
      return "another KV layout or model";
    case SlotCheck::kGeometry:
      return "another page or payload size";
    case SlotCheck::kHeaderChecksum:
      return "header checksum mismatch (torn or corrupted)";
    case SlotCheck::kChainHash:
      return "page hash does not chain from its parent and tokens";
    case SlotCheck::kPayloadChecksum:
      return "payload checksum mismatch (torn or corrupted)";
  }
  return "unknown";
}

void encode_slot(std::span<std::byte> slot, const SlotGeometry& geometry, SlotHeader& header,
                 std::span<const TokenId> tokens, std::span<const std::byte> payload) {
  if (slot.size() != geometry.slot_bytes() || tokens.size() != geometry.page_tokens ||
      (!payload.empty() && payload.size() != geometry.payload_bytes)) {
    throw std::invalid_argument(fmt::format(
        "disk slot: a slot of {} bytes, {} tokens and {} payload bytes for a geometry of {}, {} "
        "and {}",
        slot.size(), tokens.size(), payload.size(), geometry.slot_bytes(), geometry.page_tokens,
        geometry.payload_bytes));
  }
  const std::size_t payload_at = geometry.payload_at();
  if (payload.empty()) {
    std::fill(slot.begin() + static_cast<std::ptrdiff_t>(payload_at), slot.end(), std::byte{0});
  } else {
    std::memcpy(slot.data() + payload_at, payload.data(), payload.size());
    std::fill(slot.begin() + static_cast<std::ptrdiff_t>(payload_at + payload.size()), slot.end(),
              std::byte{0});
  }
  header.payload_checksum = XXH3_64bits(slot.data() + payload_at, geometry.payload_bytes);
  std::memcpy(slot.data(), kMagic, 4);
  put_le<uint16_t>(slot, 4, kSlotFormatVersion);
  put_le<uint16_t>(slot, 6, header.first ? kFirstPageFlag : 0);
  put_le<uint64_t>(slot, 8, header.layout);
  put_le<uint64_t>(slot, 16, header.generation);
  put_le<uint64_t>(slot, 24, header.hash.low);
  put_le<uint64_t>(slot, 32, header.hash.high);
  put_le<uint64_t>(slot, 40, header.parent.low);
  put_le<uint64_t>(slot, 48, header.parent.high);
  put_le<uint32_t>(slot, 56, geometry.page_tokens);
  put_le<uint32_t>(slot, 60, 0);
  put_le<uint64_t>(slot, 64, geometry.payload_bytes);
  put_le<uint64_t>(slot, 72, header.payload_checksum);
  put_le<uint64_t>(slot, 80, 0);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    put_le<uint32_t>(slot, kSlotHeaderBytes + 4 * i, static_cast<uint32_t>(tokens[i]));
  }
  put_le<uint64_t>(slot, kHeaderChecksumAt, header_checksum(slot, geometry.page_tokens));
}

SlotCheck check_slot_head(std::span<const std::byte> head, uint64_t layout,
                          const SlotGeometry& geometry, SlotHeader& header) {
  if (head.size() < geometry.payload_at()) return SlotCheck::kGeometry;
  if (std::memcmp(head.data(), kMagic, 4) != 0) {
    const bool zero = std::all_of(head.begin(), head.begin() + kSlotHeaderBytes,
                                  [](std::byte b) { return b == std::byte{0}; });
    return zero ? SlotCheck::kEmpty : SlotCheck::kMagic;
  }
  if (get_le<uint16_t>(head, 4) != kSlotFormatVersion) return SlotCheck::kVersion;
  // The checksum before any other field: a torn header says nothing reliable. It covers as many
  // tokens as the header says, if the head holds them.
  const uint32_t page_tokens = get_le<uint32_t>(head, 56);
  if (kSlotHeaderBytes + uint64_t{4} * page_tokens > head.size() ||
      get_le<uint64_t>(head, kHeaderChecksumAt) != header_checksum(head, page_tokens)) {
    return SlotCheck::kHeaderChecksum;
  }
  if (page_tokens != geometry.page_tokens || get_le<uint64_t>(head, 64) != geometry.payload_bytes) {
    return SlotCheck::kGeometry;
  }
  if (get_le<uint64_t>(head, 8) != layout) return SlotCheck::kLayout;
  header.layout = layout;
  header.first = (get_le<uint16_t>(head, 6) & kFirstPageFlag) != 0;
  header.generation = get_le<uint64_t>(head, 16);
  header.hash = {get_le<uint64_t>(head, 24), get_le<uint64_t>(head, 32)};
  header.parent = {get_le<uint64_t>(head, 40), get_le<uint64_t>(head, 48)};
  header.payload_checksum = get_le<uint64_t>(head, 72);
  std::vector<TokenId> tokens(geometry.page_tokens);
  slot_tokens(head, tokens);
  if (chain_page_hash(header.parent, tokens) != header.hash) return SlotCheck::kChainHash;
  return SlotCheck::kOk;
}

void slot_tokens(std::span<const std::byte> head, std::span<TokenId> out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<TokenId>(get_le<uint32_t>(head, kSlotHeaderBytes + 4 * i));
  }
}

SlotCheck check_slot(std::span<const std::byte> slot, uint64_t layout, const SlotGeometry& geometry,
                     SlotHeader& header) {
  const SlotCheck head = check_slot_head(slot, layout, geometry, header);
  if (head != SlotCheck::kOk) return head;
  if (slot.size() < geometry.payload_at() + geometry.payload_bytes) return SlotCheck::kGeometry;
  const std::span<const std::byte> payload = slot_payload(slot, geometry);
  if (XXH3_64bits(payload.data(), payload.size()) != header.payload_checksum) {
    return SlotCheck::kPayloadChecksum;
  }
  return SlotCheck::kOk;
}

}  // namespace radixkv::disk
