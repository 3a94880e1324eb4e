// The in-memory trace: what every reader produces and every replayer consumes.
//
// A request's prompt is described, not stored: it is its parent's prompt, then its parent's
// answer, then its own segments, where a segment is `length` tokens of some content `key`. Token j
// of content k is content_token(k, j), a fixed mixing function into [0, 2^31), so equal keys give
// equal tokens and the whole trace expands deterministically. This keeps a 61M-token Mooncake
// trace at a few MB and lets multi-turn chats, branches and agent loops share prefixes exactly.
//
// Invariants (TraceBuilder checks them; readers build through it):
//   - a parent is an earlier request (parent < own index), so trace order can expand every prompt;
//   - input_tokens = parent's input + parent's output + sum of own segment lengths, and is at
//     least 1 and at most kMaxInputTokens;
//   - priority lies in [kMinPriority, kMaxPriority].
// Content keys live in separate domains (native content, answers, Mooncake blocks, agentic
// blocks, unique filler). The only trace read from several files, an agentic folder, salts its
// block ids with the file's position, so ids that are local to a file never meet another file's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "eviction/eviction_entry.h"
#include "radix/radix_node.h"

namespace radixkv::tools {

enum class TraceFormat { kNative, kMooncake, kAgentic };
std::string_view format_name(TraceFormat format);
std::optional<TraceFormat> parse_format_name(std::string_view name);

inline constexpr uint32_t kNoParent = ~uint32_t{0};
inline constexpr uint32_t kMaxInputTokens = 1u << 30;

enum class ContentDomain : uint64_t {
  kNative = 1,         // content ids written in a native trace
  kAnswer = 2,         // a request's answer
  kMooncakeBlock = 3,  // a Mooncake hash id (512-token block)
  kAgenticBlock = 4,   // an agentic-coding hash id (block_size-token block)
  kUnique = 5,         // tokens no other request has (an agentic prompt's partial last block)
};

uint64_t content_key(ContentDomain domain, uint64_t salt, uint64_t id);
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// Token j of content `key`, in [0, 2^31).
inline TokenId content_token(uint64_t key, uint32_t j) {
  return static_cast<TokenId>(splitmix64(key + (uint64_t{j} + 1) * 0xD1B54A32D192ED03ull) >> 33);
}
// Appends tokens [begin, begin + length) of content `key`.
void append_content(uint64_t key, uint32_t begin, uint32_t length, std::vector<TokenId>& out);

struct Segment {
  uint64_t key = 0;
  uint32_t length = 0;
};

struct TraceRequest {
  uint64_t id = 0;         // the id in the source (native id; line or request index otherwise)
  double arrival_s = 0.0;  // seconds from the start of the trace
  Namespace ns = 0;        // never shares cached prefixes with another namespace
  int32_t priority = kDefaultPriority;
  uint32_t input_tokens = 0;
  uint32_t output_tokens = 0;
  uint32_t parent = kNoParent;  // index of an earlier request this prompt continues
  uint32_t first_segment = 0;   // this request's own segments, in Trace::segments
  uint32_t num_segments = 0;
  uint64_t answer_key = 0;  // content of the answer (output_tokens long)
};

struct Trace {
  std::string source;  // file or folder it was read from, or a description
  TraceFormat format = TraceFormat::kNative;
  std::vector<TraceRequest> requests;
  std::vector<Segment> segments;
  uint64_t skipped_records = 0;  // malformed records skipped under --skip-bad

  std::span<const Segment> segments_of(const TraceRequest& request) const {
    return {segments.data() + request.first_segment, request.num_segments};
  }
  uint64_t input_tokens() const;
  uint64_t output_tokens() const;
};

// A malformed trace: "file:line: reason" (line 0 when it is about the whole file).
class TraceError : public std::runtime_error {
 public:
  TraceError(std::string file, uint64_t line, std::string reason);
  const std::string& file() const { return file_; }
  uint64_t line() const { return line_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  uint64_t line_;
  std::string reason_;
};

// Appends requests to a trace, checking the invariants above. Errors throw std::invalid_argument
// with the reason only; readers add the file and line.
class TraceBuilder {
 public:
  explicit TraceBuilder(Trace& trace) : trace_(trace) {}
  // `request.input_tokens` and segment fields are filled in here; returns the new index.
  uint32_t add(TraceRequest request, std::span<const Segment> segments);

 private:
  Trace& trace_;
};

// Expands prompts into token ids, reusing its buffers: one request at a time, never the whole
// trace at once. The output holds exactly request.input_tokens tokens.
//
// Prompts re-expand the same content again and again (a system prompt in every conversation,
// every earlier turn in each new one), so contents of at least kMinMemoTokens tokens are kept
// expanded in a memo (8 MiB by default) and copied from there. The memo holds at most
// `memo_tokens` tokens and is dropped whole when it would grow past that. The output never depends
// on it; on a multi-turn trace it makes expansion about 3x faster, on Mooncake (blocks mostly used
// once or twice) it costs a few hundredths of a second.
class TokenExpander {
 public:
  static constexpr uint32_t kMinMemoTokens = 64;
  static constexpr uint64_t kDefaultMemoTokens = uint64_t{1} << 21;  // 8 MiB of tokens

  explicit TokenExpander(const Trace& trace, uint64_t memo_tokens = kDefaultMemoTokens)
      : trace_(trace), memo_limit_(memo_tokens) {}
  std::span<const TokenId> expand(std::size_t index);

 private:
  void append(uint64_t key, uint32_t length);

  const Trace& trace_;
  std::vector<uint32_t> chain_;
  std::vector<TokenId> tokens_;
  std::unordered_map<uint64_t, std::vector<TokenId>> memo_;
  uint64_t memo_size_ = 0;
  uint64_t memo_limit_;
};

}  // namespace radixkv::tools
