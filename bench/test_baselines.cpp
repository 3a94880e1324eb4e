// The baselines must answer exactly what the radix tree answers, or the benchmark compares
// different work: each is checked against a naive oracle on random prompts with heavy sharing.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "bench/baselines/block_hash_index.h"
#include "bench/baselines/linear_index.h"
#include "bench/match_world.h"
#include "bench/workload.h"
#include "radix/radix_tree.h"

namespace radixkv::bench {

namespace {

// Longest page-aligned common prefix of `query` with any of `stored`: the answer by definition.
uint32_t oracle_hit(const std::vector<std::vector<TokenId>>& stored,
                    const std::vector<TokenId>& query, uint32_t page_tokens) {
  uint32_t best = 0;
  for (const auto& prompt : stored) {
    uint32_t same = 0;
    while (same < prompt.size() && same < query.size() && prompt[same] == query[same]) ++same;
    best = std::max(best, same / page_tokens * page_tokens);
  }
  return best;
}

// A prompt that shares a random prefix of an earlier one (or none) and continues with tokens from
// a tiny vocabulary, so that pages often agree in part and hashes of partial pages are exercised.
std::vector<TokenId> random_prompt(const std::vector<std::vector<TokenId>>& earlier, Rng& rng) {
  std::vector<TokenId> prompt;
  if (!earlier.empty() && rng.between(0, 3) != 0) {
    const auto& base = earlier[rng.next() % earlier.size()];
    prompt.assign(base.begin(), base.begin() + static_cast<long>(rng.between(0, base.size())));
  }
  const uint64_t extra = rng.between(0, 80);
  for (uint64_t i = 0; i < extra; ++i) prompt.push_back(static_cast<TokenId>(rng.between(0, 2)));
  return prompt;
}

}  // namespace

TEST_CASE("common_prefix finds the first difference at every position, across memcmp blocks") {
  for (std::size_t n : {0u, 1u, 255u, 256u, 257u, 1000u}) {
    std::vector<TokenId> a(n, 7);
    for (std::size_t diff = 0; diff <= n; ++diff) {
      std::vector<TokenId> b = a;
      if (diff < n) b[diff] = 8;
      CHECK(common_prefix(a, b) == diff);
      CHECK(common_prefix(b, std::span<const TokenId>(a).first(diff)) == diff);
    }
  }
}

TEST_CASE("blockhash, linear and radix report the oracle's hit and the same pages") {
  for (uint32_t page_tokens : {1u, 2u, 4u}) {
    CAPTURE(page_tokens);
    PagePool pool(KvLayout{1, 1, 1, 2, page_tokens}, 20'000);
    RadixTree tree(pool, make_policy("lru"));
    BlockHashIndex blocks(page_tokens, pool.capacity_pages());
    LinearIndex linear(page_tokens);
    std::vector<std::vector<TokenId>> stored;
    Rng rng(page_tokens);
    std::vector<PageId> pages, fresh, radix_pages, block_pages;
    for (int round = 0; round < 300; ++round) {
      const std::vector<TokenId> query = random_prompt(stored, rng);
      const uint32_t expected = oracle_hit(stored, query, page_tokens);
      radix_pages.clear();
      block_pages.clear();
      REQUIRE(tree.peek(0, query, &radix_pages) == expected);
      REQUIRE(blocks.match(0, query, &block_pages) == expected);
      REQUIRE(radix_pages == block_pages);
      const LinearIndex::Match scan = linear.match(query);
      REQUIRE(scan.tokens == expected);
      if (expected > 0) REQUIRE(common_prefix(stored[scan.prompt], query) >= expected);

      // Cache it the way the benchmark worlds do, and in every index.
      pages = radix_pages;
      fresh.clear();
      REQUIRE(
          pool.allocate(static_cast<uint32_t>(query.size() / page_tokens - pages.size()), fresh));
      pages.insert(pages.end(), fresh.begin(), fresh.end());
      const uint32_t radix_cached = tree.insert(0, query, pages).cached_tokens;
      CHECK(blocks.insert(0, query, pages) == radix_cached);
      linear.insert(query);
      pool.release(fresh);
      stored.push_back(query);
    }
    tree.verify();
  }
}

TEST_CASE("blockhash keeps namespaces apart and erase undoes an insert") {
  BlockHashIndex blocks(2, 16);
  const std::vector<TokenId> tokens{1, 2, 3, 4, 5, 6};
  const std::vector<PageId> pages{0, 1, 2};
  CHECK(blocks.insert(7, tokens, pages) == 0);
  CHECK(blocks.insert(7, tokens, pages) == 6);
  CHECK(blocks.match(7, tokens, nullptr) == 6);
  CHECK(blocks.match(8, tokens, nullptr) == 0);
  blocks.erase(7, tokens, 1);
  std::vector<PageId> got;
  CHECK(blocks.match(7, tokens, &got) == 2);
  CHECK(got == std::vector<PageId>{0});
  CHECK_THROWS_AS(blocks.insert(7, tokens, std::vector<PageId>{0}), std::invalid_argument);
}

TEST_CASE("blockhash pinning counts per page and refuses to unpin an unpinned page") {
  BlockHashIndex blocks(1, 4);
  const std::vector<PageId> pages{1, 2};
  blocks.lock(pages);
  blocks.lock(pages);
  blocks.unlock(pages);
  blocks.unlock(pages);
  CHECK_THROWS_AS(blocks.unlock(pages), std::logic_error);
}

TEST_CASE("the workload is deterministic and its queries have the hit they claim") {
  const Workload a = make_workload(20'000), b = make_workload(20'000);
  CHECK(a.conversations == b.conversations);
  REQUIRE(a.query_sets.size() == 2 * hit_lengths_for(20'000).size());
  for (const Workload::QuerySet& set : a.query_sets) {
    for (const Query& query : set.queries) {
      CHECK(query.hit == set.hit);
      const auto stored = a.stored_tokens(query.stored);
      if (set.kind == HitKind::kBoundary) {
        CHECK(stored.size() == set.hit);
      } else {
        CHECK(stored.size() >= set.hit + 2 * a.page_tokens);
      }
    }
  }
  CHECK_THROWS_AS(make_workload(100), std::invalid_argument);
  // MatchWorld::check() throws unless every index reports every query's hit.
  CHECK_NOTHROW(MatchWorld(20'000));
}

}  // namespace radixkv::bench

namespace radixkv::bench {

TEST_CASE("radix and blockhash find a difference at every position of a long edge") {
  for (uint32_t page_tokens : {1u, 16u}) {
    CAPTURE(page_tokens);
    PagePool pool(KvLayout{1, 1, 1, 2, page_tokens}, 2'000);
    RadixTree tree(pool, make_policy("lru"));
    BlockHashIndex blocks(page_tokens, pool.capacity_pages());
    Rng rng(3);
    std::vector<TokenId> prompt(1'200);
    for (TokenId& token : prompt) token = rng.token();
    std::vector<PageId> pages;
    REQUIRE(pool.allocate(static_cast<uint32_t>(prompt.size() / page_tokens), pages));
    tree.insert(0, prompt, pages);
    blocks.insert(0, prompt, pages);
    pool.release(pages);
    for (uint32_t diff = 0; diff <= prompt.size(); ++diff) {
      std::vector<TokenId> query = prompt;
      if (diff < prompt.size()) query[diff] ^= 1;
      const uint32_t expected = diff / page_tokens * page_tokens;
      REQUIRE(tree.peek(0, query) == expected);
      REQUIRE(blocks.match(0, query, nullptr) == expected);
      REQUIRE(common_prefix(prompt, query) == diff);
    }
  }
}

}  // namespace radixkv::bench
