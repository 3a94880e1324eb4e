// The disk tier's slot format (disk/slot_format.h): a page encoded and checked back, every byte a
// reader uses covered (a flipped bit anywhere in the header, the tokens or the payload fails the
// check, and says where), and the layout id pinned, since every slot and manifest on a drive
// carries it across versions.
#include <doctest/doctest.h>

#include <vector>

#include "disk/slot_format.h"
#include "kv_store/kv_layout.h"
#include "remote/page_value.h"
#include "tests/disk_fixture.h"

namespace radixkv {
namespace {

using disk::SlotCheck;

struct Encoded {
  disk::SlotGeometry geometry{4, 100};
  testing::PagePath path = testing::PagePath::counting(3, 2, 4, 40);
  disk::SlotHeader header{0x1234, 77, path.hashes[1], path.hashes[0], false, 0};
  std::vector<std::byte> slot = std::vector<std::byte>(geometry.slot_bytes());
  std::vector<std::byte> payload = std::vector<std::byte>(100);

  Encoded() {
    testing::fill_page(path.hashes[1], payload);
    disk::encode_slot(slot, geometry, header, path.page_tokens_of(1), payload);
  }
  SlotCheck check(disk::SlotHeader* out = nullptr) const {
    disk::SlotHeader h;
    const SlotCheck c = disk::check_slot(slot, 0x1234, geometry, h);
    if (out != nullptr) *out = h;
    return c;
  }
};

TEST_CASE("disk slot: geometry in whole blocks, the payload after header and tokens") {
  const disk::SlotGeometry g{16, 2u << 20};
  CHECK(g.payload_at() == 96 + 64);
  CHECK(g.head_bytes() == 4096);
  CHECK(g.slot_bytes() == (2u << 20) + 4096);
  CHECK(disk::SlotGeometry{1024, 0}.head_bytes() == 8192);  // 96 + 4096 bytes of tokens
  CHECK(disk::SlotGeometry{4, 3984}.slot_bytes() == 4096);  // 96 + 16 + 3984
  CHECK(disk::SlotGeometry{4, 3985}.slot_bytes() == 8192);
}

TEST_CASE("disk slot: a page encodes and checks back, header and payload") {
  Encoded e;
  disk::SlotHeader h;
  REQUIRE(e.check(&h) == SlotCheck::kOk);
  CHECK(h.hash == e.path.hashes[1]);
  CHECK(h.parent == e.path.hashes[0]);
  CHECK(h.generation == 77);
  CHECK_FALSE(h.first);
  CHECK(h.payload_checksum == e.header.payload_checksum);
  std::vector<TokenId> tokens(4);
  disk::slot_tokens(e.slot, tokens);
  CHECK(std::equal(tokens.begin(), tokens.end(), e.path.page_tokens_of(1).begin()));
  const auto payload = disk::slot_payload(e.slot, e.geometry);
  CHECK(std::equal(payload.begin(), payload.end(), e.payload.begin()));
  // Padding after the payload is zero (a slot reused for a shorter page leaks nothing).
  for (std::size_t i = e.geometry.payload_at() + 100; i < e.slot.size(); ++i) {
    REQUIRE(e.slot[i] == std::byte{0});
  }
  // A first page, and a page of a pool without bytes (zeros in the payload's place).
  disk::SlotHeader first{0x1234, 1, e.path.hashes[0], e.path.seed, true, 0};
  disk::encode_slot(e.slot, e.geometry, first, e.path.page_tokens_of(0), {});
  REQUIRE(e.check(&h) == SlotCheck::kOk);
  CHECK(h.first);
  CHECK_THROWS_AS(disk::encode_slot(e.slot, e.geometry, first, e.path.tokens, {}),
                  std::invalid_argument);
}

TEST_CASE("disk slot: a flipped bit anywhere a reader looks fails the check, and says where") {
  Encoded e;
  const std::size_t used = e.geometry.payload_at() + 100;
  for (std::size_t at = 0; at < used; ++at) {
    CAPTURE(at);
    e.slot[at] ^= std::byte{0x10};
    const SlotCheck c = e.check();
    if (at < 4) {
      CHECK(c == SlotCheck::kMagic);
    } else if (at < 6) {
      CHECK(c == SlotCheck::kVersion);
    } else if (at >= 56 && at < 60) {
      CHECK(c == SlotCheck::kHeaderChecksum);  // the page tokens: the sum covers another count
    } else if (at < e.geometry.payload_at()) {
      CHECK(c == SlotCheck::kHeaderChecksum);
    } else {
      CHECK(c == SlotCheck::kPayloadChecksum);
    }
    e.slot[at] ^= std::byte{0x10};
  }
  REQUIRE(e.check() == SlotCheck::kOk);
}

TEST_CASE("disk slot: what is not this tier's page is named as such") {
  Encoded e;
  disk::SlotHeader h;
  CHECK(disk::check_slot(e.slot, 0x9999, e.geometry, h) == SlotCheck::kLayout);
  CHECK(disk::check_slot(e.slot, 0x1234, {8, 100}, h) == SlotCheck::kGeometry);
  CHECK(disk::check_slot(e.slot, 0x1234, {4, 200}, h) == SlotCheck::kGeometry);
  const std::vector<std::byte> zeros(e.slot.size());
  CHECK(disk::check_slot(zeros, 0x1234, e.geometry, h) == SlotCheck::kEmpty);
  // A header whose sums are right but whose hash is not its parent's and tokens' chain hash.
  e.header.hash.low ^= 1;
  disk::encode_slot(e.slot, e.geometry, e.header, e.path.page_tokens_of(1), e.payload);
  CHECK(e.check() == SlotCheck::kChainHash);
  // Short input.
  CHECK(disk::check_slot_head(std::span(e.slot).first(100), 0x1234, e.geometry, h) ==
        SlotCheck::kGeometry);
  CHECK(to_string(SlotCheck::kPayloadChecksum).find("torn or corrupted") != std::string::npos);
}

TEST_CASE("kv layout id: pinned, so pages on a drive (and in Redis) stay named across versions") {
  const KvLayout layout = KvLayout::preset("llama-3-8b", 16);
  CHECK(kv_layout_id(layout, "llama-3-8b") == 0xcc6cb3805f880daaULL);
  CHECK(remote::layout_id(layout, "llama-3-8b") == kv_layout_id(layout, "llama-3-8b"));
  CHECK(kv_layout_id(layout, "") != kv_layout_id(layout, "llama-3-8b"));
}

}  // namespace
}  // namespace radixkv
