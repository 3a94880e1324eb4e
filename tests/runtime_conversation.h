// The end-to-end harness of the runtime tests: TinyTransformer runs turns of conversations through
// PrefixCacheRuntime with its K/V in pool pages, logging the logits of every computed position;
// reference() recomputes a logged turn from scratch with no cache at all (DenseKv).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/prefix_cache_runtime.h"
#include "tests/tiny_transformer.h"

namespace radixkv::testing {

// One request's life as the cached run saw it.
struct TurnLog {
  Namespace ns = 0;
  std::vector<TokenId> tokens;  // prompt, then every decoded token, then the last sampled one
  uint32_t prompt_tokens = 0;
  uint32_t reused_tokens = 0;
  uint32_t host_hit_tokens = 0;     // of reused_tokens: loaded from the host tier
  uint32_t remote_hit_tokens = 0;   // of reused_tokens: loaded from the remote tier
  uint32_t partial_hit_tokens = 0;  // of reused_tokens: copied from part of a cached page
  bool waited_for_load = false;     // admit handed out a load ticket (its own load or a shared one)
  uint32_t computed_tokens = 0;     // positions the model ran
  uint32_t prefill_computed = 0;    // of which prompt positions
  std::vector<double> logits;       // one row per computed position, from reused_tokens on
};

// How a cached run drives the model.
struct DriveOptions {
  uint32_t chunk = 0;          // prefill chunk in tokens; 0 means the whole prompt at once
  uint32_t decode_steps = 4;   // positions run during decode
  bool commit_decode = false;  // commit (insert full pages) after decode steps, else mark only
  bool rope_restarts_at_zero = false;  // the offset bug: new tokens' rotary positions from 0
  bool skip_load_wait = false;         // a bug: compute before the host tier's load is done
};

// A sequence in flight; step() advances it by one prefill chunk or one decode step.
class ActiveTurn {
 public:
  ActiveTurn(PrefixCacheRuntime& runtime, PagePool& pool, const TinyTransformer& model,
             Namespace ns, std::vector<TokenId> prompt, const DriveOptions& options);
  // False once the turn is finished (the handle is dead then).
  bool step();
  bool done() const { return done_; }
  const TurnLog& log() const { return log_; }

 private:
  void run(std::span<const TokenId> tokens);

  PrefixCacheRuntime& runtime_;
  PagePool& pool_;
  const TinyTransformer& model_;
  DriveOptions options_;
  SeqHandle seq_;
  TurnLog log_;
  uint32_t next_ = 0;  // next position to compute
  uint32_t decode_left_ = 0;
  TokenId pending_ = 0;  // sampled, not yet appended
  bool done_ = false;
};

// Logits of every position of the logged turn, computed with no cache: the prompt in one go from
// position 0, then each decoded token.
std::vector<double> reference_logits(const TinyTransformer& model, const TurnLog& log);

struct Comparison {
  uint64_t rows = 0;
  uint64_t bitwise_equal_rows = 0;
  double max_relative_error = 0.0;  // max |a - b| / max(|b|, 1e-300) over all logits
};
// Compares the logged rows with the reference's rows of the same positions.
Comparison compare_with_reference(const TinyTransformer& model, const TurnLog& log);

}  // namespace radixkv::testing
