// The native format (docs/trace_format.md): an optional header {"radixkv_trace": 1, ...}, then one
// request a line: id, t, and segs and/or parent; ns, pri, out, kind, conv, agent and retain are
// optional.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tools/trace/json_fields.h"
#include "tools/trace/trace_reader.h"

namespace radixkv::tools {

using detail::RecordError;

namespace {

// Upper bounds that keep ids exact in any JSON implementation (doubles hold 2^53 exactly).
constexpr uint64_t kMaxJsonId = uint64_t{1} << 53;

struct NativeRecord {
  bool header = false;
  TraceRequest request;
  std::optional<uint64_t> parent_id;
  std::optional<uint64_t> conv;  // the session, as the file names it
  std::string_view kind;
  bool has_segs = false;
};

// Request ids and their indices. A trace whose ids are 0, 1, 2, ... in order (what `radixkv gen`
// writes) needs no table: only ids that differ from their index are kept in one.
class IdIndex {
 public:
  explicit IdIndex(const Trace& trace) : trace_(trace) {}
  std::optional<uint32_t> find(uint64_t id) const {
    if (id < trace_.requests.size() && trace_.requests[id].id == id) {
      return static_cast<uint32_t>(id);
    }
    const auto it = other_.find(id);
    return it == other_.end() ? std::nullopt : std::optional(it->second);
  }
  void add(uint64_t id, uint32_t index) {
    if (id != index) other_.emplace(id, index);
  }

 private:
  const Trace& trace_;
  std::unordered_map<uint64_t, uint32_t> other_;
};

void check_version(detail::od::value value) {
  const uint64_t version = detail::whole_number(value, "\"radixkv_trace\"", 1, UINT64_MAX);
  if (version != 1) {
    throw RecordError(
        fmt::format("trace format version {} is not supported (this reader knows 1)", version));
  }
}

void read_segments(detail::od::value value, std::vector<Segment>& segments) {
  std::size_t i = 0;
  for (auto item : detail::array_value(value, "\"segs\"")) {
    detail::od::value pair = detail::checked(std::move(item));
    std::size_t parts = 0;
    uint64_t content = 0, length = 0;
    for (auto part : detail::array_value(pair, detail::Label("segs", i))) {
      detail::od::value v = detail::checked(std::move(part));
      if (parts == 0)
        content = detail::whole_number(v, detail::Label("segs", i, " content"), 0, kMaxJsonId);
      if (parts == 1) {
        length = detail::whole_number(v, detail::Label("segs", i, " length"), 1, kMaxInputTokens);
      }
      if (parts >= 2) detail::skip_value(v);
      ++parts;
    }
    if (parts != 2) throw RecordError(fmt::format("segs[{}] must be a pair [content, length]", i));
    segments.push_back(
        {content_key(ContentDomain::kNative, 0, content), static_cast<uint32_t>(length)});
    ++i;
  }
}

// "retain": [[start, end, pri], [start, end, pri, seconds], ...]: TensorRT-LLM's token ranges
// (eviction/retention.h); without seconds the range never lapses.
void read_retention(detail::od::value value, std::vector<TokenRangeRetention>& ranges) {
  std::size_t i = 0;
  for (auto item : detail::array_value(value, "\"retain\"")) {
    detail::od::value range = detail::checked(std::move(item));
    TokenRangeRetention r;
    std::size_t parts = 0;
    for (auto part : detail::array_value(range, detail::Label("retain", i))) {
      detail::od::value v = detail::checked(std::move(part));
      if (parts == 0) {
        r.token_start = static_cast<uint32_t>(
            detail::whole_number(v, detail::Label("retain", i, " start"), 0, kMaxInputTokens));
      } else if (parts == 1) {
        r.token_end = static_cast<uint32_t>(
            detail::whole_number(v, detail::Label("retain", i, " end"), 1, kMaxInputTokens));
      } else if (parts == 2) {
        r.priority = static_cast<int32_t>(detail::whole_number(
            v, detail::Label("retain", i, " priority"), kMinPriority, kMaxPriority));
      } else if (parts == 3) {
        r.duration_s = detail::time_value(v, detail::Label("retain", i, " seconds"));
      } else {
        throw RecordError(fmt::format(
            "retain[{}] must be [start, end, priority] or [start, end, priority, seconds]", i));
      }
      ++parts;
    }
    if (parts < 3) {
      throw RecordError(fmt::format(
          "retain[{}] must be [start, end, priority] or [start, end, priority, seconds]", i));
    }
    ranges.push_back(r);
    ++i;
  }
}

// Reads records into a trace; for_each_record calls read(), then add() once the line is whole.
class NativeReader {
 public:
  explicit NativeReader(Trace& trace) : trace_(trace), builder_(trace), ids_(trace) {}

  NativeRecord read(detail::od::object object) {
    NativeRecord record;
    segments_.clear();
    ranges_.clear();
    bool has_id = false, has_t = false;
    detail::for_each_member(object, [&](std::string_view key, detail::od::value value) {
      if (key == "radixkv_trace") {
        check_version(value);
        record.header = true;
      } else if (key == "id") {
        record.request.id = detail::whole_number(value, "\"id\"", 0, kMaxJsonId);
        has_id = true;
      } else if (key == "t") {
        record.request.arrival_s = detail::time_value(value, "\"t\"");
        has_t = true;
      } else {
        read_optional(key, value, record);
      }
    });
    const bool first = std::exchange(first_record_, false);
    if (record.header) {
      if (!first) throw RecordError("the header may only be the first record");
      return record;
    }
    detail::require_field(has_id, "id");
    detail::require_field(has_t, "t");
    if (record.request.agent != 0 && !record.conv) {
      throw RecordError("\"agent\" names a sub-agent of a session: it needs \"conv\"");
    }
    if (ids_.find(record.request.id)) {
      throw RecordError(fmt::format("request id {} appears twice", record.request.id));
    }
    link_parent(record);
    check_ranges(record);
    return record;
  }

  void add(NativeRecord&& record) {
    if (record.header) return;
    record.request.request_class = builder_.class_of(record.kind);
    if (record.conv) record.request.session = builder_.session_of(*record.conv);
    const uint32_t index = builder_.add(record.request, segments_);
    ids_.add(record.request.id, index);
    if (!ranges_.empty() && trace_.retention_begin.empty()) {
      trace_.retention_begin.assign(index + 1, 0);  // the requests before had none
    }
    if (!trace_.retention_begin.empty()) {
      trace_.retention.insert(trace_.retention.end(), ranges_.begin(), ranges_.end());
      trace_.retention_begin.push_back(static_cast<uint32_t>(trace_.retention.size()));
    }
  }

 private:
  void read_optional(std::string_view key, detail::od::value value, NativeRecord& record) {
    TraceRequest& r = record.request;
    if (key == "ns") {
      r.ns = detail::whole_number(value, "\"ns\"", 0, kMaxJsonId);
    } else if (key == "pri") {
      r.priority =
          static_cast<int16_t>(detail::whole_number(value, "\"pri\"", kMinPriority, kMaxPriority));
    } else if (key == "out") {
      r.output_tokens =
          static_cast<uint32_t>(detail::whole_number(value, "\"out\"", 0, kMaxInputTokens));
    } else if (key == "parent") {
      record.parent_id = detail::whole_number(value, "\"parent\"", 0, kMaxJsonId);
    } else if (key == "segs") {
      read_segments(value, segments_);
      record.has_segs = true;
    } else if (key == "kind") {
      record.kind = detail::string_value(value, "\"kind\"");
    } else if (key == "conv") {
      record.conv = detail::whole_number(value, "\"conv\"", 0, kMaxJsonId);
    } else if (key == "retain") {
      read_retention(value, ranges_);
    } else if (key == "agent") {
      r.agent = static_cast<uint32_t>(detail::whole_number(value, "\"agent\"", 0, UINT32_MAX));
    } else {
      detail::skip_value(value);
    }
  }

  // Each range lies within the prompt: the parent's prompt and answer, then the segments.
  void check_ranges(const NativeRecord& record) const {
    if (ranges_.empty()) return;
    uint64_t input = 0;
    if (record.request.parent != kNoParent) {
      const TraceRequest& parent = trace_.requests[record.request.parent];
      input = uint64_t{parent.input_tokens} + parent.output_tokens;
    }
    for (const Segment& segment : segments_) input += segment.length;
    try {
      check_retention_ranges(ranges_, static_cast<uint32_t>(std::min<uint64_t>(input, UINT32_MAX)),
                             "\"retain\"");
    } catch (const std::invalid_argument& e) {
      throw RecordError(e.what());
    }
  }

  // The parent must be an earlier request of the same namespace.
  void link_parent(NativeRecord& record) const {
    if (!record.parent_id) {
      if (!record.has_segs) throw RecordError("a request needs \"segs\", \"parent\" or both");
      return;
    }
    const std::optional<uint32_t> parent = ids_.find(*record.parent_id);
    if (!parent) {
      throw RecordError(
          fmt::format("parent {} is not an earlier request of this trace", *record.parent_id));
    }
    record.request.parent = *parent;
    if (trace_.requests[*parent].ns != record.request.ns) {
      throw RecordError(fmt::format("parent {} is in namespace {}, this request in {}",
                                    *record.parent_id, trace_.requests[*parent].ns,
                                    record.request.ns));
    }
  }

  Trace& trace_;
  TraceBuilder builder_;
  IdIndex ids_;
  std::vector<Segment> segments_;
  std::vector<TokenRangeRetention> ranges_;
  bool first_record_ = true;
};

}  // namespace

Trace parse_native(TraceInput& input, bool skip_bad) {
  Trace trace;
  trace.source = input.name();
  trace.format = TraceFormat::kNative;
  NativeReader reader(trace);
  detail::for_each_record(
      input, skip_bad, trace,
      [&](detail::od::object object, uint64_t) { return reader.read(object); },
      [&](NativeRecord&& record) { reader.add(std::move(record)); });
  return trace;
}

}  // namespace radixkv::tools
