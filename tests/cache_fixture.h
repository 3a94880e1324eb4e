// Shared by the core tests and the fuzzer: a pool and a tree over it, and the page accounting
// check of docs/design.md ("capacity = free + cached + private"). Failures throw
// std::logic_error with the reason, so the helpers work under doctest and under libFuzzer alike.
#pragma once

#include <fmt/format.h>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "radix/radix_tree.h"
#include "runtime/tree_evictor.h"

namespace radixkv::testing {

inline std::vector<TokenId> iota_tokens(size_t n, TokenId first = 0) {
  std::vector<TokenId> tokens(n);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

// Every page's refcount equals the tree's reference plus the references in `held`; the free list
// holds exactly the pages nobody references; capacity == free + cached + private.
inline void check_device_accounting(const PagePool& pool, const RadixTree& tree,
                                    const std::vector<std::vector<PageId>>& held) {
  std::vector<uint32_t> expected(pool.capacity_pages(), 0);
  for (PageId p = 0; p < pool.capacity_pages(); ++p) expected[p] = tree.indexes_page(p) ? 1 : 0;
  uint64_t private_pages = 0;
  for (const auto& pages : held) {
    for (PageId p : pages) {
      if (expected[p] == 0) ++private_pages;
      ++expected[p];
    }
  }
  uint64_t free_pages = 0;
  for (PageId p = 0; p < pool.capacity_pages(); ++p) {
    if (pool.refcount(p) != expected[p]) {
      throw std::logic_error(
          fmt::format("page {} has refcount {}, but the tree and the holders own {}", p,
                      pool.refcount(p), expected[p]));
    }
    free_pages += expected[p] == 0 ? 1 : 0;
  }
  if (free_pages != pool.free_pages() ||
      pool.capacity_pages() != pool.free_pages() + tree.cached_pages() + private_pages) {
    throw std::logic_error(
        fmt::format("accounting: capacity {} != free {} + cached {} + private {}",
                    pool.capacity_pages(), pool.free_pages(), tree.cached_pages(), private_pages));
  }
}

// Caches `tokens` in `tree` as a finished request does: fresh pages of `pool`, inserted, the
// request's references dropped. Returns the insert's result.
inline InsertResult cache_tokens(PagePool& pool, RadixTree& tree, std::span<const TokenId> tokens,
                                 Namespace ns) {
  std::vector<PageId> pages;
  const auto n = static_cast<uint32_t>(tokens.size() / tree.page_tokens());
  if (!pool.allocate(n, pages)) throw std::logic_error("cache_tokens: the pool is full");
  const InsertResult result = tree.insert(ns, tokens, pages);
  pool.release(pages);
  return result;
}

struct CacheFixture {
  explicit CacheFixture(uint32_t page_tokens, uint32_t capacity_pages = 256,
                        std::string_view policy = "lru")
      : pool(KvLayout{1, 1, 4, 2, page_tokens}, capacity_pages), tree(pool, make_policy(policy)) {}

  // Allocates pages for `tokens` as a sequence would, inserts them, and drops the sequence's own
  // references, as a finished request does. Returns the insert's result.
  InsertResult cache(std::span<const TokenId> tokens, Namespace ns = 0) {
    return cache_tokens(pool, tree, tokens, ns);
  }

  // verify(), then check_device_accounting().
  void check(const std::vector<std::vector<PageId>>& held = {}) const {
    tree.verify();
    check_device_accounting(pool, tree, held);
  }

  PagePool pool;
  RadixTree tree;
  TreeEvictor evictor{tree};  // for a BudgetedAllocator over the tree
};

}  // namespace radixkv::testing
