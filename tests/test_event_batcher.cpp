// The chained block hash, and the EventBatcher that turns tier events into KV event batches: the
// exact events of hand-made calls, and, over scripted caches, that a consumer applying the batches
// (decoded from either encoding) holds exactly the cache's pages after every runtime call.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <msgpack.hpp>

#include "events/block_hash.h"
#include "events/event_batcher.h"
#include "events/event_codec.h"
#include "tests/event_script.h"

using namespace radixkv;
using namespace radixkv::events;
using radixkv::testing::MediumBlock;

namespace {

// The definition in radix/page_hash.h, spelled out as one XXH3-128 over a byte buffer.
PageHash one_shot(const std::vector<unsigned char>& bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.low64, h.high64};
}
void append_le(std::vector<unsigned char>& bytes, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) bytes.push_back(static_cast<unsigned char>(value >> (8 * i)));
}

struct Collected {
  std::vector<EventBatch> batches;
  EventBatcher::Sink sink() {
    return [this](EventBatch&& b) { batches.push_back(std::move(b)); };
  }
};

EventBatcherOptions options(uint32_t page_tokens) {
  EventBatcherOptions o;
  o.page_tokens = page_tokens;
  o.data_parallel_rank = 3;
  o.clock = [] { return 42.5; };
  return o;
}

}  // namespace

TEST_CASE("events: the chained block hash is XXH3-128 over the documented bytes") {
  const Namespace ns = 0x0102030405060708ULL;
  std::vector<unsigned char> seed_bytes;
  for (char c : std::string_view("radixkv-page-hash-v1")) seed_bytes.push_back(c);
  append_le(seed_bytes, ns, 8);
  const PageHash seed = one_shot(seed_bytes);
  CHECK(namespace_seed(ns) == seed);

  const std::vector<TokenId> tokens = {5, -2, 70000, 3, 9, 9, 1};  // two pages of 3, and a rest
  PageHash expected = seed;
  std::vector<BlockHash> blocks;
  for (int page = 0; page < 2; ++page) {
    std::vector<unsigned char> bytes;
    append_le(bytes, expected.low, 8);
    append_le(bytes, expected.high, 8);
    for (int t = 0; t < 3; ++t) append_le(bytes, static_cast<uint32_t>(tokens[page * 3 + t]), 4);
    expected = one_shot(bytes);
    blocks.push_back(expected.low);
  }
  CHECK(chain_page_hash(chain_page_hash(seed, {tokens.data(), 3}), {tokens.data() + 3, 3}) ==
        expected);
  CHECK(prefix_block_hashes(ns, tokens, 3) == blocks);  // the partial last page has no block
  CHECK(prefix_block_hashes(ns + 1, tokens, 3) != blocks);
  CHECK(prefix_block_hashes(ns, tokens, 8).empty());
  CHECK_THROWS_WITH_AS(prefix_block_hashes(ns, tokens, 0), "page size must be at least 1 token",
                       std::invalid_argument);
}

TEST_CASE("events: the batcher makes vLLM's events, one batch per flush") {
  Collected out;
  EventBatcher batcher(options(2), out.sink());
  const PageHash a{1, 100}, b{2, 200}, c{3, 300};
  const std::vector<PageHash> ab = {a, b};
  const std::vector<TokenId> tokens = {10, 11, 12, 13};

  batcher.flush();
  CHECK(out.batches.empty());  // nothing changed: nothing published

  batcher.stored(Tier::kDevice, 7, std::nullopt, ab, tokens);
  batcher.stored(Tier::kHost, 7, a, std::vector<PageHash>{b}, std::vector<TokenId>{12, 13});
  batcher.removed(Tier::kDevice, std::vector<PageHash>{b});
  batcher.removed(Tier::kDevice, std::vector<PageHash>{a});  // joins the removal before it
  batcher.removed(Tier::kHost, std::vector<PageHash>{b});    // another tier: its own event
  batcher.cleared();
  batcher.removed(Tier::kHost, std::vector<PageHash>{c});  // not joined across the clear
  CHECK(batcher.pending_events() == 6);
  batcher.flush();

  REQUIRE(out.batches.size() == 1);
  // The first store is at the root of namespace 7: its first block says so in its extra keys.
  BlockStored root{{1, 2}, std::nullopt, {10, 11, 12, 13}, 2, std::nullopt, "GPU", std::nullopt};
  root.extra_keys = {{namespace_extra_keys(7), std::nullopt}};
  CHECK(namespace_from_extra_keys(*root.extra_keys->front()) == 7);
  const EventBatch expected{
      42.5,
      {root, BlockStored{{2}, 1, {12, 13}, 2, std::nullopt, "CPU", std::nullopt},
       BlockRemoved{.block_hashes = {2, 1}, .medium = "GPU"},
       BlockRemoved{.block_hashes = {2}, .medium = "CPU"}, AllBlocksCleared{},
       BlockRemoved{.block_hashes = {3}, .medium = "CPU"}},
      3};
  CHECK(out.batches[0] == expected);
  CHECK(batcher.pending_events() == 0);
  CHECK(batcher.batches_flushed() == 1);
  batcher.flush();
  CHECK(out.batches.size() == 1);
  // Namespace 0 publishes no extra keys: its chain starts at the default seed.
  batcher.stored(Tier::kDevice, 0, std::nullopt, ab, tokens);
  batcher.flush();
  CHECK_FALSE(std::get<BlockStored>(out.batches.at(1).events.at(0)).extra_keys.has_value());
  out.batches.pop_back();
}

TEST_CASE("events: only msgpack [unsigned integer] is read as a namespace's extra keys") {
  for (Namespace ns : {Namespace{1}, Namespace{127}, Namespace{128}, ~Namespace{0}}) {
    CHECK(namespace_from_extra_keys(namespace_extra_keys(ns)) == ns);
  }
  const auto pack = [](auto write) {
    msgpack::sbuffer bytes;
    msgpack::packer<msgpack::sbuffer> pk(&bytes);
    write(pk);
    return std::string(bytes.data(), bytes.size());
  };
  using Packer = msgpack::packer<msgpack::sbuffer>;
  // vLLM's tuples and near misses: a str, two integers, a negative one, a nested pair, truncated.
  CHECK_FALSE(namespace_from_extra_keys(pack([](Packer& p) {
    p.pack_array(1);
    p.pack("lora");
  })));
  CHECK_FALSE(namespace_from_extra_keys(pack([](Packer& p) {
    p.pack_array(2);
    p.pack(1);
    p.pack(2);
  })));
  CHECK_FALSE(namespace_from_extra_keys(pack([](Packer& p) {
    p.pack_array(1);
    p.pack(-3);
  })));
  CHECK_FALSE(namespace_from_extra_keys(pack([](Packer& p) {
    p.pack_array(1);
    p.pack_array(2);
    p.pack("m");
    p.pack(0);
  })));
  CHECK_FALSE(namespace_from_extra_keys(namespace_extra_keys(1u << 20).substr(0, 3)));
  CHECK_FALSE(namespace_from_extra_keys(""));
}

TEST_CASE("events: the batcher refuses what it cannot describe, changing nothing") {
  Collected out;
  EventBatcher batcher(options(4), out.sink());
  const std::vector<PageHash> one = {{1, 1}};
  CHECK_THROWS_WITH_AS(
      batcher.stored(Tier::kDevice, 0, std::nullopt, one, std::vector<TokenId>{1, 2, 3}),
      "EventBatcher::stored: 1 pages of 4 tokens need 4 tokens, got 3", std::invalid_argument);
  CHECK(batcher.pending_events() == 0);

  EventBatcherOptions zero = options(0);
  CHECK_THROWS_AS(EventBatcher(zero, out.sink()), std::invalid_argument);
  EventBatcherOptions same = options(4);
  same.host_medium = "GPU";
  CHECK_THROWS_WITH_AS(EventBatcher(same, out.sink()),
                       "EventBatcher: device and host tiers are both named \"GPU\"; a consumer "
                       "could not tell them apart",
                       std::invalid_argument);
  CHECK_THROWS_AS(EventBatcher(options(4), EventBatcher::Sink{}), std::invalid_argument);
}

TEST_CASE("events: a consumer of the batches holds exactly the cache's pages after every call") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    for (EventEncoding encoding : {EventEncoding::kMap, EventEncoding::kArray}) {
      CAPTURE(seed);
      std::set<MediumBlock> held;
      size_t batches = 0;
      EventBatcher batcher(options(4), [&](EventBatch&& batch) {
        ++batches;
        testing::apply_events(held, decode_batch(encode_batch(batch, encoding)));
      });
      testing::ScriptedCache cache({.seed = seed, .page_tokens = 4, .clears = seed % 2 == 0},
                                   batcher);
      size_t most_pages = 0;
      for (int step = 0; step < 300; ++step) {
        cache.step();
        REQUIRE(held == cache.truth());
        most_pages = std::max(most_pages, cache.pages());
      }
      CHECK(batches > 200);  // most calls change something
      CHECK(most_pages > 30);
    }
  }
}
