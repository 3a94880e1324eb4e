// TreeEvictor: what the byte budget sees of a radix tree's device tier (eviction/cache_budget.h's
// Evictor), so that the tree itself knows nothing of budgets. The runtime's allocator evicts
// through one; tests that drive a bare tree under a budget use one too.
#pragma once

#include <cstdint>

#include "eviction/cache_budget.h"
#include "eviction/quota_policy.h"
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

// What the quota layer (eviction/quota_policy.h) sees of a radix tree: an entry's namespace (a walk
// to its root; a namespace root itself, adopted before its namespace is set, reads as 0 and is
// never linked) and the device pages of a namespace (the tree must count them:
// RadixTree::count_namespace_pages()).
class TreeLedger final : public NamespaceLedger {
 public:
  explicit TreeLedger(const RadixTree& tree) : tree_(tree) {}
  uint64_t namespace_of(const EvictionEntry& entry) const override {
    return static_cast<const RadixNode&>(entry).name_space();
  }
  uint64_t namespace_pages(uint64_t ns) const override { return tree_.namespace_pages(ns); }

 private:
  const RadixTree& tree_;
};

// The same for the host tier's quota layer: its entries are nodes' host parts (radix_node.h),
// its pages the namespace's indexed host pages.
class HostTreeLedger final : public NamespaceLedger {
 public:
  explicit HostTreeLedger(const RadixTree& tree) : tree_(tree) {}
  uint64_t namespace_of(const EvictionEntry& entry) const override {
    return static_cast<const HostPart&>(entry).node->name_space();
  }
  uint64_t namespace_pages(uint64_t ns) const override { return tree_.namespace_host_pages(ns); }

 private:
  const RadixTree& tree_;
};

}  // namespace radixkv
