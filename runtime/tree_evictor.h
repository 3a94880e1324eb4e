// TreeEvictor: what the byte budget sees of a radix tree's device tier (eviction/cache_budget.h's
// Evictor), so that the tree itself knows nothing of budgets. The runtime's allocator evicts
// through one; tests that drive a bare tree under a budget use one too.
#pragma once

#include <cstdint>

#include "eviction/cache_budget.h"
#include "radix/radix_tree.h"

namespace radixkv {

class TreeEvictor final : public Evictor {
 public:
  explicit TreeEvictor(RadixTree& tree) : tree_(tree) {}
  uint64_t cached_pages() const override { return tree_.cached_pages(); }
  uint64_t evictable_pages() const override { return tree_.evictable_pages(); }
  uint64_t evict_pages(uint64_t n) override { return tree_.evict_pages(n); }

 private:
  RadixTree& tree_;
};

}  // namespace radixkv
