// The KV event payload: golden bytes written from the msgpack spec for both of vLLM's encodings,
// round trips, the older and newer shapes vLLM consumers meet, and a clear error for every kind of
// bad payload. (An independent decoder, Python's msgpack, checks the encoder in
// test_events_integration.cpp.)
#include <doctest/doctest.h>

#include <xxhash.h>
#include <msgpack.hpp>
#include <random>
#include <string>

#include "events/event_codec.h"
#include "tests/event_script.h"

using namespace radixkv::events;

namespace {

// Golden pieces written from the msgpack spec (github.com/msgpack/msgpack/blob/master/spec.md).
std::string hex(std::string_view text) {  // "92 01 cf ff..": spaces only for reading
  std::string digits;
  for (char c : text) {
    if (c != ' ') digits += c;
  }
  std::string out;
  for (size_t i = 0; i + 1 < digits.size(); i += 2) {
    out += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
  }
  return out;
}
std::string fixstr(std::string_view s) {  // strings of < 32 bytes: 0xa0 | length, then the bytes
  return static_cast<char>(0xa0 | s.size()) + std::string(s);
}

EventBatch small_batch() {
  BlockStored stored;
  stored.block_hashes = {1, 0xffffffffffffffffULL};
  stored.token_ids = {7, -1};
  stored.block_size = 1;
  stored.medium = "GPU";
  return {
      1.5, {stored, BlockRemoved{.block_hashes = {300}, .medium = "CPU"}, AllBlocksCleared{}}, 0};
}

const std::string kTs = hex("cb 3ff8000000000000");            // float64 1.5
const std::string kHashes = hex("92 01 cf ffffffffffffffff");  // [1, 2^64-1]
const std::string kTokens = hex("92 07 ff");                   // [7, -1]
const std::string kNil = hex("c0");

// Packs a value with msgpack-cxx: inputs for the decoder that the encoder would never write.
template <typename T>
std::string pack(const T& value) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, value);
  return {buffer.data(), buffer.size()};
}

void check_decode_error(const std::string& payload, const std::string& names) {
  CAPTURE(names);
  try {
    decode_batch(payload);
    FAIL("decoded a bad payload");
  } catch (const EventDecodeError& e) {
    CHECK_MESSAGE(std::string(e.what()).find(names) != std::string::npos, e.what());
  }
}

}  // namespace

TEST_CASE("events: the map encoding is vLLM's tagged maps, byte for byte") {
  const std::string expected =
      hex("83") + fixstr("ts") + kTs + fixstr("events") + hex("93") +
      // BlockStored: 8 entries, "type" first, then the fields in vLLM's order
      hex("88") + fixstr("type") + fixstr("BlockStored") + fixstr("block_hashes") + kHashes +
      fixstr("parent_block_hash") + kNil + fixstr("token_ids") + kTokens + fixstr("block_size") +
      hex("01") + fixstr("lora_id") + kNil + fixstr("medium") + fixstr("GPU") +
      fixstr("lora_name") + kNil +
      // BlockRemoved: 300 is a uint16 (0xcd)
      hex("83") + fixstr("type") + fixstr("BlockRemoved") + fixstr("block_hashes") +
      hex("91 cd 012c") + fixstr("medium") + fixstr("CPU") +
      // AllBlocksCleared: just its tag
      hex("81") + fixstr("type") + fixstr("AllBlocksCleared") + fixstr("data_parallel_rank") +
      hex("00");
  CHECK(encode_batch(small_batch(), EventEncoding::kMap) == expected);
  CHECK(decode_batch(expected) == small_batch());
}

TEST_CASE("events: the array encoding puts each event's tag first, byte for byte") {
  const std::string expected = hex("93") + kTs + hex("93") + hex("98") + fixstr("BlockStored") +
                               kHashes + kNil + kTokens + hex("01") + kNil + fixstr("GPU") + kNil +
                               hex("93") + fixstr("BlockRemoved") + hex("91 cd 012c") +
                               fixstr("CPU") + hex("91") + fixstr("AllBlocksCleared") + hex("00");
  CHECK(encode_batch(small_batch(), EventEncoding::kArray) == expected);
  CHECK(decode_batch(expected) == small_batch());
}

TEST_CASE("events: an unset data_parallel_rank is left out, as msgspec's omit_defaults does") {
  EventBatch batch{2.0, {}, std::nullopt};
  CHECK(encode_batch(batch, EventEncoding::kMap) ==
        hex("82") + fixstr("ts") + hex("cb 4000000000000000") + fixstr("events") + hex("90"));
  CHECK(encode_batch(batch, EventEncoding::kArray) == hex("92 cb 4000000000000000 90"));
}

TEST_CASE("events: random batches survive a round trip in both encodings") {
  std::mt19937_64 rng(17);
  for (int i = 0; i < 500; ++i) {
    const EventBatch batch = radixkv::testing::random_event_batch(rng);
    for (EventEncoding encoding : {EventEncoding::kMap, EventEncoding::kArray}) {
      CAPTURE(i);
      CHECK(decode_batch(encode_batch(batch, encoding)) == batch);
    }
  }
}

TEST_CASE("events: the decoder reads what other publishers write") {
  SUBCASE("the older array events without medium and lora_name") {
    const std::string payload = hex("92") + kTs + hex("92") + hex("96") + fixstr("BlockStored") +
                                kHashes + hex("05") + kTokens + hex("01") + kNil + hex("92") +
                                fixstr("BlockRemoved") + hex("91 01");
    const EventBatch batch = decode_batch(payload);
    REQUIRE(batch.events.size() == 2);
    const auto& stored = std::get<BlockStored>(batch.events[0]);
    CHECK(stored.parent_block_hash == 5);
    CHECK_FALSE(stored.medium.has_value());
    CHECK_FALSE(batch.data_parallel_rank.has_value());
    CHECK(std::get<BlockRemoved>(batch.events[1]).block_hashes == std::vector<BlockHash>{1});
  }
  SUBCASE("newer fields it does not know, in maps and after an array's fields") {
    const std::string map_payload =
        hex("83") + fixstr("ts") + kTs + fixstr("events") + hex("91") + hex("84") + fixstr("type") +
        fixstr("BlockRemoved") + fixstr("block_hashes") + hex("91 02") + fixstr("medium") + kNil +
        fixstr("group_idx") + hex("03") + fixstr("extra") + hex("c3");
    const EventBatch batch = decode_batch(map_payload);
    CHECK(std::get<BlockRemoved>(batch.events.at(0)) ==
          BlockRemoved{.block_hashes = {2}, .medium = std::nullopt, .group_idx = 3});
    const std::string array_payload = hex("93") + kTs + hex("91") + hex("94") +
                                      fixstr("BlockRemoved") + hex("91 02") + kNil + hex("03") +
                                      hex("00");
    CHECK(std::get<BlockRemoved>(decode_batch(array_payload).events.at(0)) ==
          BlockRemoved{.block_hashes = {2}, .medium = std::nullopt, .group_idx = 3});
  }
  SUBCASE("vLLM's earlier shape: an array batch of map events") {
    const std::string payload = hex("93") + kTs + hex("91") + hex("83") + fixstr("type") +
                                fixstr("BlockRemoved") + fixstr("block_hashes") + hex("91 02") +
                                fixstr("medium") + fixstr("GPU") + hex("01");
    const EventBatch batch = decode_batch(payload);
    CHECK(batch.data_parallel_rank == 1);
    CHECK(std::get<BlockRemoved>(batch.events.at(0)).medium == "GPU");
  }
  SUBCASE("SGLang's shape: [ts, events], [tag, block_hashes] removals, signed hashes, no medium") {
    const std::string payload = hex("92") + kTs + hex("92") + hex("96") + fixstr("BlockStored") +
                                hex("91 d3 8000000000000001") + kNil + hex("92 05 06") + hex("02") +
                                kNil + hex("92") + fixstr("BlockRemoved") +
                                hex("91 d3 8000000000000001");
    const EventBatch batch = decode_batch(payload);
    const auto& stored = std::get<BlockStored>(batch.events.at(0));
    CHECK(stored.block_hashes == std::vector<BlockHash>{0x8000000000000001ULL});
    CHECK(stored.token_ids == std::vector<int64_t>{5, 6});
    CHECK(std::get<BlockRemoved>(batch.events.at(1)).block_hashes == stored.block_hashes);
  }
  SUBCASE("token ids that are not integers (SGLang's bigram keys) decode as none") {
    const std::string payload = hex("92") + kTs + hex("91") + hex("96") + fixstr("BlockStored") +
                                hex("91 01") + kNil + hex("92 92 01 02 92 03 04") + hex("02") +
                                kNil;
    const EventBatch batch = decode_batch(payload);
    const auto& stored = std::get<BlockStored>(batch.events.at(0));
    CHECK(stored.block_hashes == std::vector<BlockHash>{1});
    CHECK(stored.token_ids.empty());
  }
  SUBCASE("a signed 64-bit block hash names the same block as its unsigned form") {
    const std::string payload = hex("92") + kTs + hex("91") + hex("93") + fixstr("BlockRemoved") +
                                hex("91 d3 8000000000000000") + kNil;
    CHECK(std::get<BlockRemoved>(decode_batch(payload).events.at(0)).block_hashes ==
          std::vector<BlockHash>{0x8000000000000000ULL});
  }
  SUBCASE("an integer timestamp") { CHECK(decode_batch(hex("92 05 90")).ts == 5.0); }
}

TEST_CASE("events: every form of vLLM's ExternalBlockHash becomes the 64-bit integer vLLM uses") {
  // One BlockRemoved whose block_hashes hold `hash`: the decoded 64-bit value.
  const auto decoded = [](const std::string& hash) {
    const std::string payload =
        hex("92") + kTs + hex("91 93") + fixstr("BlockRemoved") + hex("91") + hash + kNil;
    return std::get<BlockRemoved>(decode_batch(payload).events.at(0)).block_hashes.at(0);
  };
  // SHA-256 bytes (32): the last 8 bytes big-endian, as vLLM's maybe_convert_block_hash does
  // with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES.
  std::string digest;
  for (int i = 0; i < 32; ++i) digest += static_cast<char>(i + 1);
  CHECK(decoded(hex("c4 20") + digest) == 0x191a1b1c1d1e1f20ULL);
  CHECK(decoded(hex("c4 03 0a0b0c")) == 0x0a0b0cULL);  // fewer than 8: padded on the left
  CHECK(decoded(hex("c4 08 ffffffffffffffff")) == ~0ULL);
  CHECK(decoded(hex("cf 191a1b1c1d1e1f20")) == 0x191a1b1c1d1e1f20ULL);  // the same block as int
  CHECK(decoded(hex("ff")) == ~0ULL);                                   // -1
  CHECK(decoded(hex("d3 8000000000000000")) == 0x8000000000000000ULL);
  // A str: XXH3-64 of its bytes.
  CHECK(decoded(fixstr("a1b2")) == XXH3_64bits("a1b2", 4));
  CHECK(decoded(fixstr("a1b2")) != decoded(fixstr("a1b3")));
}

TEST_CASE("events: vLLM's later BlockStored fields, byte for byte, left out when unset") {
  BlockStored stored;
  stored.block_hashes = {1, 2};
  stored.token_ids = {7, 8};
  stored.block_size = 1;
  stored.medium = "GPU";
  stored.group_idx = 1;
  const std::string head = fixstr("BlockStored") + hex("92 01 02") + kNil + hex("92 07 08") +
                           hex("01") + kNil + fixstr("GPU") + kNil;
  // Array: the unset extra_keys before group_idx is written as nil; nothing after group_idx.
  CHECK(encode_batch({1.5, {stored}, std::nullopt}, EventEncoding::kArray) ==
        hex("92") + kTs + hex("91 9a") + head + kNil + hex("01"));
  // Map: only the set one.
  const std::string map = encode_batch({1.5, {stored}, std::nullopt}, EventEncoding::kMap);
  CHECK(map.find(fixstr("group_idx") + hex("01")) != std::string::npos);
  CHECK(map.find(fixstr("extra_keys")) == std::string::npos);
  CHECK(decode_batch(map) == EventBatch{1.5, {stored}, std::nullopt});

  // extra_keys: each entry the msgpack tuple as msgpack-cxx packs it, whatever the width used.
  stored.group_idx.reset();
  stored.kv_cache_spec_sliding_window = 128;
  stored.extra_keys = {
      {std::nullopt, hex("92") + fixstr("lora") + hex("92") + fixstr("m") + hex("05")}};
  const std::string array = encode_batch({1.5, {stored}, std::nullopt}, EventEncoding::kArray);
  CHECK(array == hex("92") + kTs + hex("91 9c") + head + hex("92 c0 92") + fixstr("lora") +
                     hex("92") + fixstr("m") + hex("05") + kNil + kNil + hex("cc 80"));
  CHECK(decode_batch(array) == EventBatch{1.5, {stored}, std::nullopt});
  // A wider encoding of the same tuple (str8 for "lora", uint8 for 5) decodes to the same bytes.
  const std::string wide = hex("92") + kTs + hex("91 99") + fixstr("BlockStored") +
                           hex("92 01 02") + kNil + hex("92 07 08") + hex("01") + kNil +
                           fixstr("GPU") + kNil + hex("92 c0 92 d9 04") + "lora" + hex("92") +
                           fixstr("m") + hex("cc 05");
  CHECK(std::get<BlockStored>(decode_batch(wide).events.at(0)).extra_keys == stored.extra_keys);
}

TEST_CASE(
    "events: the removal reason is BlockRemoved's last field, byte for byte, both encodings") {
  const EventBatch batch{
      1.5, {BlockRemoved{.block_hashes = {2}, .medium = "GPU", .reason = "demoted"}}, 0};
  // Array: after vLLM's group_idx (nil), so that a decoder that knows vLLM's fields drops it.
  const std::string array = hex("93") + kTs + hex("91") + hex("95") + fixstr("BlockRemoved") +
                            hex("91 02") + fixstr("GPU") + kNil + fixstr("demoted") + hex("00");
  CHECK(encode_batch(batch, EventEncoding::kArray) == array);
  CHECK(decode_batch(array) == batch);
  // Map: one more key; unset group_idx left out.
  const std::string map = hex("83") + fixstr("ts") + kTs + fixstr("events") + hex("91") +
                          hex("84") + fixstr("type") + fixstr("BlockRemoved") +
                          fixstr("block_hashes") + hex("91 02") + fixstr("medium") + fixstr("GPU") +
                          fixstr("reason") + fixstr("demoted") + fixstr("data_parallel_rank") +
                          hex("00");
  CHECK(encode_batch(batch, EventEncoding::kMap) == map);
  CHECK(decode_batch(map) == batch);
  // Without a reason the event is vLLM's exactly (the golden tests above).
  // In an array, something else in the reason's slot is a later field it does not know: ignored.
  const std::string later = hex("93") + kTs + hex("91") + hex("95") + fixstr("BlockRemoved") +
                            hex("91 02") + fixstr("GPU") + kNil + hex("07") + hex("00");
  CHECK(std::get<BlockRemoved>(decode_batch(later).events.at(0)).reason == std::nullopt);
  // In a map the key is radixkv's: a reason that is not a string is an error naming it.
  const std::string bad = hex("82") + fixstr("ts") + kTs + fixstr("events") + hex("91") +
                          hex("83") + fixstr("type") + fixstr("BlockRemoved") +
                          fixstr("block_hashes") + hex("91 02") + fixstr("reason") + hex("07");
  check_decode_error(bad, "events[0].reason: expected str");
}

TEST_CASE("events: a bad payload is an error that says what is wrong") {
  const std::string good = encode_batch(small_batch(), EventEncoding::kMap);
  check_decode_error("", "payload: not a msgpack value");
  check_decode_error(good.substr(0, good.size() - 3), "payload: not a msgpack value");
  check_decode_error(good + hex("00"), "payload: 1 bytes after the end of the batch");
  // An array header claiming 4 billion elements in a 5-byte payload fails, allocating nothing.
  check_decode_error(hex("dd ffffffff"), "payload: not a msgpack value");
  check_decode_error(hex("07"), "batch: expected a map or an array, got an integer");
  check_decode_error(hex("81") + fixstr("ts") + kTs, "batch: missing field \"events\"");
  check_decode_error(hex("92") + fixstr("x") + hex("90"), "batch.ts: expected a number, got str");
  check_decode_error(hex("92") + kTs + hex("07"), "batch.events: expected an array");
  check_decode_error(hex("92") + kTs + hex("91 91") + fixstr("BlockMoved"),
                     "events[0]: unknown event type \"BlockMoved\"");
  check_decode_error(hex("92") + kTs + hex("91 90"), "events[0]: empty array: no event tag");
  check_decode_error(hex("92") + kTs + hex("91 81") + fixstr("medium") + kNil,
                     "events[0]: missing field \"type\"");
  check_decode_error(
      hex("92") + kTs + hex("91 93") + fixstr("BlockRemoved") + hex("91 80") + kNil,
      "events[0].block_hashes[0]: expected a block hash (an integer, bytes or str), got a map");
  check_decode_error(
      hex("92") + kTs + hex("91 93") + fixstr("BlockRemoved") + hex("91 c4 00") + kNil,
      "events[0].block_hashes[0]: an empty bytes block hash");
  check_decode_error(hex("92") + kTs + hex("91 93") + fixstr("BlockRemoved") + hex("91 a0") + kNil,
                     "events[0].block_hashes[0]: an empty str block hash");
  // extra_keys must have one entry per block.
  check_decode_error(hex("92") + kTs + hex("91 99") + fixstr("BlockStored") + hex("92 01 02") +
                         kNil + hex("90 01") + kNil + kNil + kNil + hex("91 c0"),
                     "events[0].extra_keys: 1 entries for 2 blocks");
  check_decode_error(hex("92") + kTs + hex("91 93") + fixstr("BlockRemoved") + hex("91 01 90"),
                     "events[0].medium: expected str, got an array");
  check_decode_error(hex("92") + kTs + hex("91 96") + fixstr("BlockStored") + hex("91 01") + kNil +
                         hex("91 01") + hex("00") + kNil,
                     "events[0].block_size: must be a positive 32-bit count, got 0");
  check_decode_error(hex("92") + kTs + hex("91 93") + fixstr("BlockStored") + hex("91 01") + kNil,
                     "events[0]: missing field \"token_ids\"");
  check_decode_error(hex("93") + kTs + hex("90") + fixstr("zero"),
                     "batch.data_parallel_rank: expected an integer, got str");
  check_decode_error(pack(std::vector<double>{1.0, 2.0}), "batch.events: expected an array");
}

TEST_CASE("events: encoding names") {
  CHECK(parse_event_encoding("map") == EventEncoding::kMap);
  CHECK(parse_event_encoding("array") == EventEncoding::kArray);
  CHECK(to_string(EventEncoding::kArray) == "array");
  CHECK_THROWS_WITH_AS(parse_event_encoding("json"),
                       "unknown KV event encoding \"json\" (known: map, array)",
                       std::invalid_argument);
}
