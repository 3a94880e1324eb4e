// The data every match benchmark runs on: many conversations off a few system prompts, plus
// probe prompts that give queries an exact, known hit length. One seed makes it all
// deterministic, and the SAME stored prompts and queries go into every index (radix, blockhash,
// linear, memcmp).
//
// Shape, for a target of T cached tokens (page tokens P):
//   - 8 system prompts of hi/4..hi tokens, hi = clamp(T/20, 64, 4096), picked with a skew (the
//     first ones are the most used).
//   - background conversations: a system prompt, then 1..8 turns of a user message
//     (hi/128..hi/8 tokens) and an answer (hi/64..hi/4); each turn's prompt + answer is stored
//     (what a finished request caches), so a conversation's stored prompts are prefixes of each
//     other, as in a multi-turn chat.
//   - for each hit length L in {16, 64, ..., 131072} with 8 L <= T, and each HitKind, Q probe
//     conversations (Q = clamp(T / 40L, 1, 16)). A probe starts with a system prompt when L
//     reaches at least a page past its end, then carries tokens of its own. Its query is its first
//     L tokens followed by tokens no stored prompt has:
//       kBoundary: the probe stores exactly L tokens, so the hit ends where a leaf ends (the next
//                  turn of a chat);
//       kInside:   the probe stores L + L/4 tokens (at least 2 pages more), so the hit ends inside
//                  an edge (an edited or regenerated message).
// Background conversations are added until the stored prompts hold about T distinct tokens.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/splitmix64.h"
#include "radix/radix_node.h"

namespace radixkv::bench {

enum class HitKind { kBoundary, kInside };
std::string_view hit_kind_name(HitKind kind);

struct Query {
  std::vector<TokenId> tokens;
  uint32_t hit = 0;     // the cached prefix every index must report, in tokens
  uint32_t stored = 0;  // index into Workload::stored of the prompt that shares the hit
};

struct Workload {
  struct Stored {
    uint32_t conversation = 0;
    uint32_t length = 0;  // a stored prompt is the first `length` tokens of its conversation
  };
  struct QuerySet {
    HitKind kind = HitKind::kBoundary;
    uint32_t hit = 0;
    std::vector<Query> queries;
  };

  uint32_t page_tokens = 16;
  uint64_t target_tokens = 0;
  std::vector<std::vector<TokenId>> conversations;
  std::vector<Stored> stored;  // in insertion order
  std::vector<QuerySet> query_sets;
  uint64_t estimated_unique_tokens = 0;  // an upper bound, to size the page pool
  uint32_t max_stored_tokens = 0;

  std::span<const TokenId> stored_tokens(std::size_t i) const {
    return {conversations[stored[i].conversation].data(), stored[i].length};
  }
  const QuerySet* find(HitKind kind, uint32_t hit) const;
};

inline constexpr uint32_t kHitLengths[] = {16, 64, 256, 1024, 4096, 16384, 65536, 131072};

// Hit lengths that a tree of `target_tokens` gets queries for (8 L <= T).
std::vector<uint32_t> hit_lengths_for(uint64_t target_tokens);

Workload make_workload(uint64_t target_tokens, uint32_t page_tokens = 16, uint64_t seed = 42);

// Deterministic 64-bit generator (SplitMix64, common/splitmix64.h), so the data does not depend on
// the standard library's distributions.
class Rng {
 public:
  explicit Rng(uint64_t seed) : stream_(seed) {}
  uint64_t next() { return stream_.next(); }
  // Uniform in [lo, hi].
  uint64_t between(uint64_t lo, uint64_t hi) { return lo + next() % (hi - lo + 1); }
  TokenId token() { return static_cast<TokenId>(next() >> 33); }

 private:
  SplitMix64 stream_;
};

}  // namespace radixkv::bench
