#include "bench/match_world.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <stdexcept>

#include "bench/alloc_counter.h"

namespace radixkv::bench {

namespace {

uint32_t pool_pages_for(const Workload& w) {
  const uint64_t pages = w.estimated_unique_tokens / w.page_tokens + w.conversations.size() +
                         w.max_stored_tokens / w.page_tokens + 1024;
  if (pages >= kInvalidPage) throw std::invalid_argument("MatchWorld: workload too large");
  return static_cast<uint32_t>(pages);
}

}  // namespace

MatchWorld::MatchWorld(uint64_t target_tokens, uint32_t page_tokens)
    : workload(make_workload(target_tokens, page_tokens)),
      pool(KvLayout{1, 1, 1, 2, page_tokens}, pool_pages_for(workload)),
      tree(pool, make_policy("lru")),
      blocks(page_tokens, pool.capacity_pages()),
      linear(page_tokens) {
  // The block-hash index was constructed above: its per-page arrays are measured on a twin built
  // here, and what its map holds is counted as the prompts go in.
  int64_t blocks_arrays = alloc_counts().live_bytes;
  {
    const BlockHashIndex twin(page_tokens, pool.capacity_pages());
    blocks_arrays = alloc_counts().live_bytes - blocks_arrays;
  }
  int64_t blocks_delta = 0, linear_delta = 0;
  std::vector<PageId> pages;
  std::vector<PageId> fresh;
  for (std::size_t i = 0; i < workload.stored.size(); ++i) {
    const std::span<const TokenId> tokens = workload.stored_tokens(i);
    pages.clear();
    fresh.clear();
    tree.match(0, tokens, &pages);
    const auto missing = static_cast<uint32_t>(tokens.size() / page_tokens - pages.size());
    if (!pool.allocate(missing, fresh)) throw std::logic_error("MatchWorld: page pool too small");
    pages.insert(pages.end(), fresh.begin(), fresh.end());
    tree.insert(0, tokens, pages);

    int64_t before = alloc_counts().live_bytes;
    blocks.insert(0, tokens, pages);
    blocks_delta += alloc_counts().live_bytes - before;
    before = alloc_counts().live_bytes;
    linear.insert(tokens);
    linear_delta += alloc_counts().live_bytes - before;

    pool.release(fresh);
  }
  blockhash_bytes = blocks_delta + blocks_arrays;
  linear_bytes = linear_delta;
  check();
}

void MatchWorld::check() const {
  std::vector<PageId> radix_pages, block_pages;
  for (const Workload::QuerySet& set : workload.query_sets) {
    for (const Query& query : set.queries) {
      radix_pages.clear();
      block_pages.clear();
      const uint32_t radix = tree.peek(0, query.tokens, &radix_pages);
      const uint32_t blockhash = blocks.match(0, query.tokens, &block_pages);
      const uint32_t scan = linear.match(query.tokens).tokens;
      const uint32_t floor = common_prefix(query.tokens, workload.stored_tokens(query.stored)) /
                             tree.page_tokens() * tree.page_tokens();
      if (radix != query.hit || blockhash != query.hit || scan != query.hit || floor != query.hit ||
          radix_pages != block_pages) {
        throw std::logic_error(fmt::format(
            "MatchWorld::check: {} query of hit {} tokens (tree {}): radix {}, blockhash {}, "
            "linear {}, memcmp {}, pages agree: {}",
            hit_kind_name(set.kind), query.hit, workload.target_tokens, radix, blockhash, scan,
            floor, radix_pages == block_pages));
      }
    }
  }
}

MatchWorld& match_world(uint64_t target_tokens) {
  static std::map<uint64_t, std::unique_ptr<MatchWorld>> worlds;
  auto& world = worlds[target_tokens];
  if (!world) world = std::make_unique<MatchWorld>(target_tokens);
  return *world;
}

}  // namespace radixkv::bench
