// A sequence: one admitted request as the runtime adapter tracks it, the handle a scheduler uses
// to address it, and the read-only view of it the runtime hands out. (The runtime's own record
// of a sequence is internal: runtime/runtime_internals.h.)
//
// Per sequence, with P = page_tokens:
//   tokens          prompt, then every token appended during decode.
//   block_table     page i holds the KV of tokens [i*P, (i+1)*P); it always covers every token
//                   (block_table.size() == ceil(tokens.size() / P)), and the sequence holds one
//                   pool reference on each of its entries.
//   reused_tokens   tokens whose KV came from the cache at admit: the position offset. A multiple
//                   of P and at most floor((prompt-1)/P)*P, so the last prompt token is always
//                   computed (its logits are needed); with partial-page reuse, plus up to P-1
//                   tokens of the next page (never the last prompt token).
//   computed_tokens tokens whose KV the model has written (reused ones included); never more than
//                   tokens.size(), never decreasing. The last sampled token usually has none yet.
//   committed_pages leading pages that are the tree's canonical pages and covered by `locked`, the
//                   one tree node this sequence keeps locked (the end of its committed prefix; the
//                   namespace root when nothing is committed). Pages from committed_pages on are
//                   private to the sequence.
//
// A handle names a slot and a generation. Slots are reused after finish/abort with the generation
// bumped, so a stale handle is recognised and refused instead of reaching another request.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "radix/radix_node.h"

namespace radixkv {

struct SeqHandle {
  uint32_t slot = 0;
  uint32_t generation = 0;  // 0 is never issued: a default handle is invalid
  friend bool operator==(SeqHandle, SeqHandle) = default;
};

// Written out like RocksDB's entry states: a sequence is live only while kRunning.
enum class SeqState : uint8_t { kRunning, kFinished, kAborted };
std::string_view to_string(SeqState state);

// Read-only view of a live sequence; the spans stay valid until the next call that changes it.
struct SequenceView {
  uint64_t request_id = 0;
  Namespace name_space = 0;
  int32_t priority = 0;
  SeqState state = SeqState::kRunning;
  uint32_t prompt_tokens = 0;
  uint32_t reused_tokens = 0;
  uint32_t computed_tokens = 0;
  uint32_t committed_pages = 0;
  CopyTicket load_ticket = 0;  // the load admit started or joined (0: none)
  std::span<const TokenId> tokens;
  std::span<const PageId> block_table;
  uint64_t session = 0;  // Request::session and Request::agent
  uint32_t agent = 0;
};

}  // namespace radixkv
