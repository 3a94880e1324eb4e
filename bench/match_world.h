// MatchWorld: one workload (bench/workload.h) stored in every index side by side: the radix tree
// over a page pool, the block-hash index and the linear list, each fed the same prompts in the
// same order. Prompts go into the tree the way a runtime caches a finished request: match the
// cached prefix (taking the tree's pages for it), allocate pages for the rest, insert, drop the
// request's own references. The block-hash index gets the same page ids.
//
// check() runs every query through every index and throws std::logic_error unless all of them
// report the query's known hit length and the radix tree and block-hash index agree on the pages.
#pragma once

#include <cstdint>

#include "bench/baselines/block_hash_index.h"
#include "bench/baselines/linear_index.h"
#include "bench/workload.h"
#include "radix/radix_tree.h"

namespace radixkv::bench {

struct MatchWorld {
  explicit MatchWorld(uint64_t target_tokens, uint32_t page_tokens = 16);

  void check() const;
  uint64_t cached_tokens() const { return tree.cached_pages() * tree.page_tokens(); }

  Workload workload;
  PagePool pool;
  RadixTree tree;
  BlockHashIndex blocks;
  LinearIndex linear;
  // Heap bytes each baseline holds, measured by the bench binary's counting operator new.
  int64_t blockhash_bytes = 0;
  int64_t linear_bytes = 0;
};

// One world per target size, built on first use and kept for the life of the process.
MatchWorld& match_world(uint64_t target_tokens);

}  // namespace radixkv::bench
