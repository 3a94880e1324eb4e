// Inside a PrefixCacheRuntime: its record of a sequence, and a way in for radixkv's own
// benchmarks and tests. Internal: not installed, not for engines (they get SequenceView, the const
// tree and the statistics through the runtime's public API).
#pragma once

#include <cstdint>
#include <vector>

#include "radix/radix_node.h"
#include "runtime/prefix_cache_runtime.h"
#include "runtime/sequence.h"

namespace radixkv::detail {

// The runtime's record of one slot (the fields are described in runtime/sequence.h). Vectors keep
// their capacity across reuse of the slot.
struct Sequence {
  uint64_t request_id = 0;
  Namespace name_space = 0;
  int32_t priority = 0;
  uint32_t generation = 0;
  SeqState state = SeqState::kFinished;
  uint32_t prompt_tokens = 0;
  uint32_t reused_tokens = 0;
  uint32_t computed_tokens = 0;
  uint32_t committed_pages = 0;
  AdmitMode mode = AdmitMode::kCompute;
  uint32_t output_tokens = 0;  // the request's, for the policy (AccessHint)
  uint16_t request_class = 0;
  uint64_t session = 0;
  uint32_t agent = 0;
  std::vector<TokenRangeRetention> retention;  // the request's hints (Request::retention)
  CopyTicket load_ticket = 0;   // the load admit started for the host run, 0 when none
  RadixNode* locked = nullptr;  // the end of the committed prefix, locked by this sequence
  // A remote load cached pages of this request without recording its access of their path; the
  // request's next insert records it, or finish does (PrefixCacheRuntime::load_remote).
  bool access_owed = false;
  // The sequence's tokens: its own copy of the prompt and what decode appends (kCompute), or the
  // caller's prompt read in place until the sequence ends (kCacheOnly, which never decodes: the
  // cache-mode replay's prompts would otherwise be copied once more each).
  std::vector<TokenId> own_tokens;
  std::span<const TokenId> borrowed_tokens;
  std::vector<PageId> block_table;

  std::span<const TokenId> tokens() const {
    return mode == AdmitMode::kCacheOnly ? borrowed_tokens : std::span<const TokenId>(own_tokens);
  }
  SequenceView view() const {
    return {request_id,    name_space,    priority,        state,
            prompt_tokens, reused_tokens, computed_tokens, committed_pages,
            load_ticket,   tokens(),      block_table,     session,
            agent};
  }
};

// The mutable tree of a runtime. bench/bench_runtime.cpp erases the leaf each timed request
// cached, so that every iteration sees the same cache; tests/test_bad_input_matrix.cpp misuses
// the tree under a runtime to show that the runtime's state survives.
struct RuntimeInternals {
  static RadixTree& tree(PrefixCacheRuntime& runtime) { return runtime.tree_; }
};

}  // namespace radixkv::detail
