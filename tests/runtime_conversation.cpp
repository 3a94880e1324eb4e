#include "tests/runtime_conversation.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

namespace radixkv::testing {

ActiveTurn::ActiveTurn(PrefixCacheRuntime& runtime, PagePool& pool, const TinyTransformer& model,
                       Namespace ns, std::vector<TokenId> prompt, const DriveOptions& options)
    : runtime_(runtime), pool_(pool), model_(model), options_(options) {
  log_.ns = ns;
  log_.tokens = std::move(prompt);
  log_.prompt_tokens = static_cast<uint32_t>(log_.tokens.size());
  const AdmitResult admitted = runtime_.admit({0, ns, log_.tokens, kDefaultPriority});
  REQUIRE_MESSAGE(admitted.ok(), "admit refused: ", to_string(admitted.status));
  // The position offset is the reused length, and the last prompt token is always computed.
  CHECK(admitted.position_offset == admitted.reused_tokens);
  // Whole pages, then (partial-page reuse) fewer than a page's tokens copied from a cached page.
  CHECK((admitted.reused_tokens - admitted.partial_hit_tokens) % runtime_.page_tokens() == 0);
  CHECK(admitted.partial_hit_tokens < runtime_.page_tokens());
  CHECK(admitted.reused_tokens < log_.prompt_tokens);
  CHECK(admitted.reused_tokens == admitted.device_hit_tokens + admitted.host_hit_tokens +
                                      admitted.remote_hit_tokens + admitted.partial_hit_tokens);
  // The host run's bytes are there only once its load is done.
  if (!options.skip_load_wait) runtime_.wait_load(admitted.load_ticket);
  seq_ = admitted.seq;
  log_.reused_tokens = admitted.reused_tokens;
  log_.host_hit_tokens = admitted.host_hit_tokens;
  log_.remote_hit_tokens = admitted.remote_hit_tokens;
  log_.partial_hit_tokens = admitted.partial_hit_tokens;
  log_.waited_for_load = admitted.load_ticket != 0;
  next_ = admitted.position_offset;
  decode_left_ = options.decode_steps;
}

void ActiveTurn::run(std::span<const TokenId> tokens) {
  // The block table is read afresh: a commit may have switched pages to the tree's.
  PagedKv kv(pool_, runtime_.view(seq_).block_table, model_.config());
  std::optional<uint32_t> rope_first;
  if (options_.rope_restarts_at_zero) rope_first = next_ - log_.reused_tokens;
  model_.forward(kv, tokens, next_, log_.logits, rope_first);
  next_ += static_cast<uint32_t>(tokens.size());
  log_.computed_tokens += static_cast<uint32_t>(tokens.size());
}

bool ActiveTurn::step() {
  if (done_) return false;
  const uint32_t vocab = model_.config().vocab;
  if (next_ < log_.prompt_tokens) {
    const uint32_t left = log_.prompt_tokens - next_;
    const uint32_t chunk = options_.chunk == 0 ? left : std::min(options_.chunk, left);
    run(std::span<const TokenId>(log_.tokens).subspan(next_, chunk));
    log_.prefill_computed += chunk;
    runtime_.commit(seq_, next_);
  } else {
    // Decode: append the sampled token (a page when the last is full), run it, sample the next.
    const ExtendResult extended = runtime_.append_token(seq_, pending_);
    REQUIRE_MESSAGE(extended.ok(), "append refused: ", to_string(extended.status));
    log_.tokens.push_back(pending_);
    run(std::span<const TokenId>(log_.tokens).last(1));
    if (options_.commit_decode) {
      runtime_.commit(seq_, next_);
    } else {
      runtime_.mark_computed(seq_, next_);
    }
    --decode_left_;
  }
  if (next_ == log_.tokens.size()) {
    pending_ = static_cast<TokenId>(
        TinyTransformer::argmax(std::span<const double>(log_.logits).last(vocab)));
  }
  if (next_ >= log_.prompt_tokens && decode_left_ == 0) {
    // The last sampled token joins the sequence without KV: finish must not cache it.
    REQUIRE(runtime_.append_token(seq_, pending_).ok());
    log_.tokens.push_back(pending_);
    CHECK(runtime_.view(seq_).computed_tokens == log_.tokens.size() - 1);
    runtime_.finish(seq_);
    done_ = true;
  }
  return !done_;
}

std::vector<double> reference_logits(const TinyTransformer& model, const TurnLog& log) {
  DenseKv kv(model.config());
  std::vector<double> logits;
  const std::span<const TokenId> tokens(log.tokens);
  model.forward(kv, tokens.first(log.prompt_tokens), 0, logits);
  const uint32_t end = log.reused_tokens + log.computed_tokens;
  for (uint32_t p = log.prompt_tokens; p < end; ++p)
    model.forward(kv, tokens.subspan(p, 1), p, logits);
  return logits;
}

Comparison compare_with_reference(const TinyTransformer& model, const TurnLog& log) {
  const uint32_t vocab = model.config().vocab;
  const std::vector<double> reference = reference_logits(model, log);
  Comparison result;
  result.rows = log.computed_tokens;
  REQUIRE(log.logits.size() == size_t{log.computed_tokens} * vocab);
  REQUIRE(reference.size() == size_t{log.reused_tokens + log.computed_tokens} * vocab);
  for (uint32_t row = 0; row < log.computed_tokens; ++row) {
    const double* cached = log.logits.data() + size_t{row} * vocab;
    const double* fresh = reference.data() + size_t{log.reused_tokens + row} * vocab;
    bool equal = true;
    for (uint32_t i = 0; i < vocab; ++i) {
      equal = equal && cached[i] == fresh[i];
      const double error = std::abs(cached[i] - fresh[i]) / std::max(std::abs(fresh[i]), 1e-300);
      result.max_relative_error = std::max(result.max_relative_error, error);
    }
    result.bitwise_equal_rows += equal ? 1 : 0;
  }
  return result;
}

}  // namespace radixkv::testing
