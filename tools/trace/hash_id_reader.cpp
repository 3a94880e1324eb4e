// Hash-id JSONL (Mooncake, and Qwen/Bailian's from "KVCache Cache in the Wild", ATC'25): one
// request a line, {"timestamp", "input_length", "output_length", "hash_ids": [...]}, each id a
// block of block_tokens tokens; Bailian adds chat_id, parent_chat_id, type and turn.
// A Bailian chat chain is a session: a request whose parent_chat_id names an earlier request's
// chat_id joins that request's session; any other request starts one (keyed by its own chat_id).
#include <optional>
#include <unordered_map>
#include <vector>

#include "tools/trace/json_fields.h"
#include "tools/trace/trace_reader.h"

namespace radixkv::tools {

using detail::RecordError;

namespace {

struct HashIdRecord {
  TraceRequest request;
  std::string_view type;
  std::optional<uint64_t> chat_id;
  int64_t parent_chat_id = -1;
};

class HashIdReader {
 public:
  HashIdReader(Trace& trace, TraceFormat format, uint32_t block_tokens)
      : builder_(trace),
        block_tokens_(block_tokens),
        // Mooncake's timestamps are milliseconds, Bailian's seconds.
        seconds_per_unit_(format == TraceFormat::kBailian ? 1.0 : 1e-3) {}

  HashIdRecord read(detail::od::object object, uint64_t line) {
    HashIdRecord record;
    TraceRequest& r = record.request;
    r.id = line;
    segments_.clear();
    bool has_time = false, has_input = false, has_output = false, has_ids = false;
    detail::for_each_member(object, [&](std::string_view key, detail::od::value value) {
      if (key == "timestamp") {
        r.arrival_s = detail::time_value(value, "\"timestamp\"") * seconds_per_unit_;
        has_time = true;
      } else if (key == "input_length") {
        r.input_tokens = static_cast<uint32_t>(
            detail::whole_number(value, "\"input_length\"", 1, kMaxInputTokens));
        has_input = true;
      } else if (key == "output_length") {
        r.output_tokens = static_cast<uint32_t>(
            detail::whole_number(value, "\"output_length\"", 0, kMaxInputTokens));
        has_output = true;
      } else if (key == "hash_ids") {
        read_ids(value);
        has_ids = true;
      } else {
        read_optional(key, value, record);
      }
    });
    detail::require_field(has_time, "timestamp");
    detail::require_field(has_input, "input_length");
    detail::require_field(has_output, "output_length");
    detail::require_field(has_ids, "hash_ids");
    const uint64_t blocks = (uint64_t{r.input_tokens} + block_tokens_ - 1) / block_tokens_;
    if (segments_.size() != blocks) {
      throw RecordError(
          fmt::format("\"hash_ids\" has {} ids, but input_length {} needs ceil({}/{}) = {} blocks",
                      segments_.size(), r.input_tokens, r.input_tokens, block_tokens_, blocks));
    }
    return record;
  }

  // Block by block; the last may be partial.
  void add(HashIdRecord&& record) {
    uint32_t left = record.request.input_tokens;
    for (Segment& segment : segments_) {
      segment.length = std::min(left, block_tokens_);
      left -= segment.length;
    }
    record.request.request_class = builder_.class_of(record.type);
    if (record.chat_id) record.request.session = session_of(record);
    builder_.add(record.request, segments_);
  }

 private:
  // Each id's segment, its length set by add() once input_length is known.
  void read_ids(detail::od::value value) {
    for (auto item : detail::array_value(value, "\"hash_ids\"")) {
      const uint64_t id =
          detail::whole_number(detail::checked(std::move(item)),
                               detail::Label("hash_ids", segments_.size()), 0, UINT64_MAX);
      segments_.push_back({content_key(ContentDomain::kMooncakeBlock, 0, id), 0});
    }
  }

  // The session of the chain: the first chat_id of the chain keys it.
  uint32_t session_of(const HashIdRecord& record) {
    uint64_t first = *record.chat_id;
    if (record.parent_chat_id >= 0) {
      const auto parent = chain_start_.find(static_cast<uint64_t>(record.parent_chat_id));
      if (parent != chain_start_.end()) first = parent->second;
    }
    chain_start_.emplace(*record.chat_id, first);
    return builder_.session_of(first);
  }

  // Bailian's fields; anything else is skipped.
  static void read_optional(std::string_view key, detail::od::value value, HashIdRecord& record) {
    if (key == "type") {
      record.type = detail::string_value(value, "\"type\"");
    } else if (key == "chat_id") {
      record.chat_id = detail::whole_number(value, "\"chat_id\"", 0, UINT64_MAX);
    } else if (key == "parent_chat_id") {
      record.parent_chat_id =
          detail::signed_whole_number(value, "\"parent_chat_id\"", -1, INT64_MAX);
    } else if (key == "turn") {
      detail::whole_number(value, "\"turn\"", 0, UINT64_MAX);
    } else {
      detail::skip_value(value);
    }
  }

  TraceBuilder builder_;
  const uint32_t block_tokens_;
  const double seconds_per_unit_;
  std::vector<Segment> segments_;  // the record's blocks, read by read(), added by add()
  std::unordered_map<uint64_t, uint64_t> chain_start_;  // chat_id -> first chat_id of its chain
};

}  // namespace

Trace parse_hash_ids(TraceInput& input, TraceFormat format, uint32_t block_tokens, bool skip_bad) {
  if (block_tokens < 1 || block_tokens > kMaxInputTokens) {
    throw std::invalid_argument(
        fmt::format("block_tokens {} is outside [1, {}]", block_tokens, kMaxInputTokens));
  }
  Trace trace;
  trace.source = input.name();
  trace.format = format;
  HashIdReader reader(trace, format, block_tokens);
  detail::for_each_record(
      input, skip_bad, trace,
      [&](detail::od::object object, uint64_t line) { return reader.read(object, line); },
      [&](HashIdRecord&& record) { reader.add(std::move(record)); });
  return trace;
}

}  // namespace radixkv::tools
