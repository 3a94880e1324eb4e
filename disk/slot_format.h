// How the disk tier lays one page out in its slot of the slots file (disk/disk_tier.h).
//
// A slot is a whole number of 4 KiB blocks (kBlockBytes: the alignment O_DIRECT needs on every
// common drive and filesystem), all slots of a path the same size:
// clang-format off
//    0  magic "RKVD"                      56  page tokens (u32)
//    4  format version (u16) = 1          60  zero (u32)
//    6  flags (u16): bit 0, the first     64  payload bytes (u64)
//       page of its path (its parent is   72  XXH3-64 of the payload (u64)
//       a namespace root)                 80  zero (u64)
//    8  layout id (u64)                   88  XXH3-64 of bytes [0, 88) and the tokens (u64)
//   16  generation (u64)                  96  the page's tokens (int32 each)
//   24  page hash (16 bytes, low first)   96 + 4P  the payload, then zeros to the slot's end
//   40  parent page's hash (16 bytes)
// clang-format on
// all little-endian. The header checksum covers every header field, the payload's checksum among
// them, and the tokens; so the two together cover every byte a reader uses. The page hash is
// radix/page_hash.h's chain hash, and a reader checks it against the parent and the tokens too.
//
// Why both checksums: recovery reads only the head of each slot (header and tokens, head_bytes())
// to rebuild its index quickly, and the payload's checksum is checked when the page is loaded. A
// slot torn by a crash (the new header over old payload blocks, or the reverse) fails one of them:
// a counted miss, never served.
//
// The generation is the tier's write counter: a page written twice (evicted, then written again
// into another slot) leaves an older copy that recovery finds too; the newest wins. Recovery also
// restores the eviction order of the pages from it (older generations were written earlier).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "radix/page_hash.h"

namespace radixkv::disk {

inline constexpr std::size_t kBlockBytes = 4096;
inline constexpr std::size_t kSlotHeaderBytes = 96;
inline constexpr uint16_t kSlotFormatVersion = 1;

constexpr uint64_t round_up_to_block(uint64_t bytes) {
  return (bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
}

// The sizes of a slot for pages of `page_tokens` tokens and `payload_bytes` bytes.
struct SlotGeometry {
  uint32_t page_tokens = 0;
  uint64_t payload_bytes = 0;

  uint64_t payload_at() const { return kSlotHeaderBytes + uint64_t{4} * page_tokens; }
  // What recovery reads of each slot: header and tokens, whole blocks.
  uint64_t head_bytes() const { return round_up_to_block(payload_at()); }
  uint64_t slot_bytes() const { return round_up_to_block(payload_at() + payload_bytes); }
};

struct SlotHeader {
  uint64_t layout = 0;
  uint64_t generation = 0;
  PageHash hash;
  PageHash parent;
  bool first = false;  // the parent is a namespace root
  uint64_t payload_checksum = 0;
};

// Writes the page into `slot` (slot_bytes() of `geometry`): header, `tokens` (page_tokens of
// them), `payload` (payload_bytes, or nothing: zeros in its place, a page of a pool without
// bytes), zeros to the end. Sets header.payload_checksum. Throws std::invalid_argument for spans of
// the wrong size.
void encode_slot(std::span<std::byte> slot, const SlotGeometry& geometry, SlotHeader& header,
                 std::span<const TokenId> tokens, std::span<const std::byte> payload);

enum class SlotCheck : uint8_t {
  kOk,
  kEmpty,  // never written: no magic, all zero
  kMagic,
  kVersion,
  kLayout,
  kGeometry,        // another page size or payload size than this tier's
  kHeaderChecksum,  // torn or corrupted header or tokens
  kChainHash,       // the page hash is not the chain hash of its parent and tokens
  kPayloadChecksum,
};
std::string_view to_string(SlotCheck check);

// Checks the head of a slot (at least head_bytes() of `geometry`) against the tier's layout and
// geometry; on kOk fills `header`. The payload is not looked at.
SlotCheck check_slot_head(std::span<const std::byte> head, uint64_t layout,
                          const SlotGeometry& geometry, SlotHeader& header);
// The tokens of a checked head (page_tokens of them) into `out`.
void slot_tokens(std::span<const std::byte> head, std::span<TokenId> out);
// Checks a whole slot: its head, then the payload against the header's checksum.
SlotCheck check_slot(std::span<const std::byte> slot, uint64_t layout, const SlotGeometry& geometry,
                     SlotHeader& header);
inline std::span<const std::byte> slot_payload(std::span<const std::byte> slot,
                                               const SlotGeometry& geometry) {
  return slot.subspan(geometry.payload_at(), geometry.payload_bytes);
}

}  // namespace radixkv::disk
