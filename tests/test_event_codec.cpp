// The KV event payload: golden bytes written from the msgpack spec for both of vLLM's encodings,
// round trips, the older and newer shapes vLLM consumers meet, and a clear error for every kind of
// bad payload. (An independent decoder, Python's msgpack, checks the encoder in
// test_events_integration.cpp.)
#include <doctest/doctest.h>

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
  return {1.5, {stored, BlockRemoved{{300}, "CPU"}, AllBlocksCleared{}}, 0};
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
    CHECK(std::get<BlockRemoved>(batch.events.at(0)).block_hashes == std::vector<BlockHash>{2});
    const std::string array_payload = hex("93") + kTs + hex("91") + hex("94") +
                                      fixstr("BlockRemoved") + hex("91 02") + kNil + hex("03") +
                                      hex("00");
    CHECK(std::get<BlockRemoved>(decode_batch(array_payload).events.at(0)).block_hashes ==
          std::vector<BlockHash>{2});
  }
  SUBCASE("a signed 64-bit block hash names the same block as its unsigned form") {
    const std::string payload = hex("92") + kTs + hex("91") + hex("93") + fixstr("BlockRemoved") +
                                hex("91 d3 8000000000000000") + kNil;
    CHECK(std::get<BlockRemoved>(decode_batch(payload).events.at(0)).block_hashes ==
          std::vector<BlockHash>{0x8000000000000000ULL});
  }
  SUBCASE("an integer timestamp") { CHECK(decode_batch(hex("92 05 90")).ts == 5.0); }
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
      hex("92") + kTs + hex("91 93") + fixstr("BlockRemoved") + hex("91") + fixstr("x") + kNil,
      "events[0].block_hashes[0]: expected an integer block hash, got str");
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
