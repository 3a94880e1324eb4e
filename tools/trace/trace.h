// The in-memory trace: what every reader produces and every replayer consumes.
//
// A request's prompt is described, not stored: it is its parent's prompt, then its parent's
// answer, then its own segments, where a segment is `length` tokens of some content `key`. Token j
// of content k is content_token(k, j) (below), so equal keys give equal tokens and the whole trace
// expands deterministically. This keeps a 61M-token Mooncake trace at a few MB and lets multi-turn
// chats, branches and agent loops share prefixes exactly.
//
// Invariants (TraceBuilder checks them; readers build through it):
//   - a parent is an earlier request (parent < own index), so trace order can expand every prompt;
//   - input_tokens = parent's input + parent's output + sum of own segment lengths, and is at
//     least 1 and at most kMaxInputTokens;
//   - priority lies in [kMinPriority, kMaxPriority];
//   - request_class < class_names.size(), and class_names[0] is "" (no type given).
// Content keys live in separate domains (native content, answers, hash-id blocks, agentic
// blocks, unique filler). The only trace read from several files, an agentic folder, salts its
// block ids with the file's position, so ids that are local to a file never meet another file's.
//
// Sessions: a request may belong to a session (an agent's or a user's conversation, as the source
// names it: an agentic file, a Bailian chat chain, a native "conv") and within it to a sub-agent.
// TraceBuilder numbers sessions 1, 2, ... in order of first appearance (0: the source names none);
// a session's main agent is agent 0, its sub-agents 1, 2, ... (docs/trace_format.md).
//
// Size: a request takes 56 bytes and a segment 16, whatever the source format, and requests live
// in a std::deque, whose storage grows block by block without ever copying the requests already
// read (a vector's doubling would hold the old and the new copy at once). That is what bounds the
// memory of a replay: a 1 GB generated trace is read into about half a gigabyte.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/splitmix64.h"
#include "eviction/eviction_entry.h"
#include "eviction/retention.h"
#include "radix/radix_node.h"

namespace radixkv::tools {

enum class TraceFormat { kNative, kMooncake, kBailian, kAgentic };
std::string_view format_name(TraceFormat format);
std::optional<TraceFormat> parse_format_name(std::string_view name);
// "native, mooncake, bailian, agentic": for help texts and errors.
std::string_view format_names();

inline constexpr uint32_t kNoParent = ~uint32_t{0};
// The longest prompt a trace may hold: 16,777,216 tokens, beyond the longest context window of any
// model served today (10M), and 64 MiB once expanded into token ids. A replay expands prompts one
// at a time, so this bounds the memory of every expansion (a 38-byte record cannot ask for 4 GB).
inline constexpr uint32_t kMaxInputTokens = 1u << 24;
// Request classes are 16-bit (TraceRequest::request_class, AccessHint::request_class).
inline constexpr uint32_t kMaxRequestClasses = 1u << 16;

enum class ContentDomain : uint64_t {
  kNative = 1,         // content ids written in a native trace
  kAnswer = 2,         // a request's answer
  kMooncakeBlock = 3,  // a Mooncake or Bailian hash id (a block of --block-tokens tokens)
  kAgenticBlock = 4,   // an agentic-coding hash id (block_size-token block)
  kUnique = 5,         // tokens no other request has (an agentic prompt's partial last block)
};

// Injective in `id` for a given domain and salt (splitmix64 is a bijection of 64-bit words), so
// distinct block ids of one trace never share a key.
uint64_t content_key(ContentDomain domain, uint64_t salt, uint64_t id);

// Token j of content `key`, in [0, 2^31): a cheap fill, not a hash, since a replay only needs
// tokens to be equal exactly where contents are. The key is cut into three 29-bit chunks
// (3 * 29 >= 64) and token j holds chunk j % 3, tagged with j % 3 in bits 29-30:
//   - equal keys give equal tokens at equal offsets;
//   - any 3 consecutive tokens of one content hold all of its key, so two contents' runs of 3 or
//     more tokens at the same offsets are equal only when their keys are: a page of >= 3 tokens
//     inside a block never equals a page of another block;
//   - tokens of different phases (j % 3) never collide, whatever the keys.
// Expanding is then a 3-token pattern repeated, about the cost of a memset.
inline TokenId content_token(uint64_t key, uint32_t j) {
  const uint32_t phase = j % 3;
  const auto chunk = static_cast<uint32_t>((key >> (29 * phase)) & ((1u << 29) - 1));
  return static_cast<TokenId>((phase << 29) | chunk);
}
// Writes tokens [begin, begin + length) of content `key` to out[0, length).
void fill_content(uint64_t key, uint32_t begin, uint32_t length, TokenId* out);
// Appends tokens [begin, begin + length) of content `key`.
void append_content(uint64_t key, uint32_t begin, uint32_t length, std::vector<TokenId>& out);

struct Segment {
  uint64_t key = 0;
  uint32_t length = 0;
};

struct TraceRequest {
  // The id in the source (native id; line for hash-id formats; file and position for agentic),
  // unique within the trace. It also names the answer's content (answer_key()).
  uint64_t id = 0;
  double arrival_s = 0.0;  // seconds from the start of the trace
  Namespace ns = 0;        // never shares cached prefixes with another namespace
  uint32_t input_tokens = 0;
  uint32_t output_tokens = 0;
  uint32_t parent = kNoParent;  // index of an earlier request this prompt continues
  uint32_t first_segment = 0;   // this request's own segments, in Trace::segments
  uint32_t num_segments = 0;
  int16_t priority = kDefaultPriority;
  // The request's type as a small integer (Trace::class_names), passed to eviction policies
  // (AccessHint::request_class); 0 when the source gives none.
  uint16_t request_class = 0;
  uint32_t session = 0;  // 1, 2, ...: the session it belongs to; 0 when the source names none
  uint32_t agent = 0;    // within its session: 0 the main agent, k its k-th sub-agent
};

// Content of a request's answer (output_tokens long): its own, so no other content repeats it.
inline uint64_t answer_key(const TraceRequest& request) {
  return content_key(ContentDomain::kAnswer, 0, request.id);
}

struct Trace {
  std::string source;  // file or folder it was read from, or a description
  TraceFormat format = TraceFormat::kNative;
  std::deque<TraceRequest> requests;
  std::vector<Segment> segments;
  uint64_t skipped_records = 0;  // malformed records skipped under --skip-bad
  // class_names[c] is the source's name of request class c; class 0 is "" (no type given).
  std::vector<std::string> class_names = {""};
  // Names of the namespaces that come from names in the source (an agentic request's model), by
  // namespace id; empty when namespaces are numbers in the source (native) or absent.
  std::vector<std::string> namespace_names;
  uint32_t sessions = 0;  // sessions named: requests' session ids are 1..sessions

  // Retention hints (native "retain"), each checked against its prompt (check_retention_ranges):
  // request i's are retention[retention_begin[i] .. retention_begin[i + 1]). retention_begin is
  // empty when no request has any (TraceRequest stays 56 bytes).
  std::vector<TokenRangeRetention> retention;
  std::vector<uint32_t> retention_begin;

  std::span<const Segment> segments_of(const TraceRequest& request) const {
    return {segments.data() + request.first_segment, request.num_segments};
  }
  std::span<const TokenRangeRetention> retention_of(std::size_t index) const {
    if (retention_begin.empty()) return {};
    return {retention.data() + retention_begin[index],
            retention.data() + retention_begin[index + 1]};
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
  explicit TraceBuilder(Trace& trace);
  // `request.input_tokens` and segment fields are filled in here; returns the new index.
  uint32_t add(TraceRequest request, std::span<const Segment> segments);
  // The class named `name` ("" is class 0), added to Trace::class_names on first use.
  uint16_t class_of(std::string_view name);
  // The namespace named `name`, added to Trace::namespace_names on first use (ids from 0).
  Namespace namespace_of(std::string_view name);
  // The session the source calls `key` (numbered from 1 on first use; Trace::sessions counts
  // them). Throws std::invalid_argument past 2^32 - 1 sessions.
  uint32_t session_of(uint64_t key);

 private:
  // Looked up by string_view without making a string (every record names its class).
  struct NameHash : std::hash<std::string_view> {
    using is_transparent = void;
  };
  template <typename Id>
  using NameMap = std::unordered_map<std::string, Id, NameHash, std::equal_to<>>;

  Trace& trace_;
  NameMap<uint16_t> classes_;
  NameMap<Namespace> namespaces_;
  std::unordered_map<uint64_t, uint32_t> sessions_;
};

// Expands prompts into token ids, reusing its buffers: one request at a time, never the whole
// trace at once. The output holds the request's first min(input_tokens, limit) tokens: a caller
// that can never look past a point (cache mode, past its capacity) expands no further. Each
// content is filled in place (append_content), which costs about what copying it would, so no
// content is kept expanded between requests.
class TokenExpander {
 public:
  explicit TokenExpander(const Trace& trace) : trace_(trace) {}
  std::span<const TokenId> expand(std::size_t index, uint64_t limit = UINT64_MAX);

 private:
  const Trace& trace_;
  std::vector<uint32_t> chain_;
  std::vector<TokenId> tokens_;
};

}  // namespace radixkv::tools
