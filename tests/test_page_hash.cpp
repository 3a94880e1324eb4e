// The chained page hash (radix/page_hash.h): its definition byte for byte against libxxhash's
// one-shot XXH3-128, values pinned so that a change of definition (or of library) shows, and the
// tree keeping one hash per page on either tier.
#include <doctest/doctest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tests/tier_fixture.h"

using namespace radixkv;
using radixkv::testing::iota_tokens;
using radixkv::testing::TierFixture;

namespace {

// The documented bytes: the parent's 16 bytes (low half first, little-endian), then the tokens.
PageHash by_definition(const PageHash& parent, const std::vector<TokenId>& tokens) {
  std::vector<unsigned char> bytes(16 + 4 * tokens.size());
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<unsigned char>(parent.low >> (8 * i));
    bytes[8 + i] = static_cast<unsigned char>(parent.high >> (8 * i));
  }
  for (size_t t = 0; t < tokens.size(); ++t) {
    const auto value = static_cast<uint32_t>(tokens[t]);
    for (int i = 0; i < 4; ++i)
      bytes[16 + 4 * t + i] = static_cast<unsigned char>(value >> (8 * i));
  }
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.low64, h.high64};
}

}  // namespace

TEST_CASE("the page hash is XXH3-128 over the parent's hash and the page's tokens, as documented") {
  unsigned char seed_bytes[28];
  std::memcpy(seed_bytes, "radixkv-page-hash-v1", 20);
  for (int i = 0; i < 8; ++i)
    seed_bytes[20 + i] = static_cast<unsigned char>(uint64_t{7} >> (8 * i));
  const XXH128_hash_t seed = XXH3_128bits(seed_bytes, sizeof(seed_bytes));
  CHECK(namespace_seed(7) == PageHash{seed.low64, seed.high64});
  const std::vector<TokenId> page{1, -2, 3, 1 << 30};
  CHECK(chain_page_hash(namespace_seed(7), page) == by_definition(namespace_seed(7), page));
  // Pinned values: stable across runs, machines and versions of the library.
  CHECK(namespace_seed(0) == PageHash{0xb3cc37f9fe925672ull, 0x4b47f089dfeb5985ull});
  const PageHash first = chain_page_hash(namespace_seed(0), std::vector<TokenId>{1, 2, 3, 4});
  CHECK(first == PageHash{0xfe9b221cbd3c3da5ull, 0xf1ef2648ba4ac0f0ull});
  CHECK(chain_page_hash(first, std::vector<TokenId>{5, 6, 7, 8}) ==
        PageHash{0x0dcced6d6dd63a71ull, 0xbca7512bdd75bae2ull});
  CHECK(event_id(first) == first.low);
  CHECK(namespace_seed(1) != namespace_seed(0));
}

TEST_CASE("the tree keeps each page's hash through splits, moves between tiers and loads") {
  TierFixture f(4);
  f.tree.enable_page_hashes();
  const auto key = iota_tokens(20);  // five pages
  f.cache(key);
  f.tree.evict_pages(3);             // pages 2..4 to the host
  f.tree.match(0, iota_tokens(12));  // split inside the host run
  f.check();                         // verify() recomputes every chain
  PageHash want = namespace_seed(0);
  std::vector<PageHash> chain;
  for (int p = 0; p < 5; ++p) {
    want = chain_page_hash(want, std::span<const TokenId>(key).subspan(4 * p, 4));
    chain.push_back(want);
  }
  auto sorted = [](std::vector<PageHash> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  CHECK(sorted(f.tree.tier_page_hashes(Tier::kDevice)) == sorted({chain[0], chain[1]}));
  CHECK(sorted(f.tree.tier_page_hashes(Tier::kHost)) == sorted({chain[2], chain[3], chain[4]}));
  std::vector<PageId> held;
  const auto [m, ticket] = f.admit(key, held);
  CHECK(sorted(f.tree.tier_page_hashes(Tier::kDevice)) == sorted(chain));
  f.check({held});
  f.tree.unlock(m.node);
  f.pool.release(held);
  // Hashes are turned on before anything is cached, or not at all.
  TierFixture late(4);
  late.cache(key);
  CHECK_THROWS_WITH_AS(late.tree.enable_page_hashes(), doctest::Contains("empty tree"),
                       std::invalid_argument);
  CHECK_FALSE(late.tree.page_hashes());
}
