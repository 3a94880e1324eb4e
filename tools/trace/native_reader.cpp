#include <unordered_map>
#include <vector>

#include "tools/trace/reader_util.h"
#include "tools/trace/trace_reader.h"

namespace radixkv::tools {

using detail::RecordError;

namespace {

// Upper bounds that keep ids exact in any JSON implementation (doubles hold 2^53 exactly).
constexpr int64_t kMaxJsonId = (int64_t{1} << 53);

void check_header(const JsonValue& record) {
  const int64_t version = detail::integer_field(record, "radixkv_trace", 1, INT64_MAX);
  if (version != 1) {
    throw RecordError(
        fmt::format("trace format version {} is not supported (this reader knows 1)", version));
  }
}

}  // namespace

Trace parse_native(std::string_view text, const std::string& source, bool skip_bad) {
  Trace trace;
  trace.source = source;
  trace.format = TraceFormat::kNative;
  TraceBuilder builder(trace);
  std::unordered_map<uint64_t, uint32_t> index_of_id;
  std::vector<Segment> segments;
  bool first_record = true;
  detail::for_each_json_line(
      text, source, skip_bad, trace.skipped_records, [&](const JsonValue& record, uint64_t) {
        if (record.find("radixkv_trace") != nullptr) {
          if (!first_record) throw RecordError("the header may only be the first record");
          first_record = false;
          check_header(record);
          return;
        }
        first_record = false;
        TraceRequest request;
        request.id = static_cast<uint64_t>(detail::integer_field(record, "id", 0, kMaxJsonId));
        if (index_of_id.contains(request.id)) {
          throw RecordError(fmt::format("request id {} appears twice", request.id));
        }
        request.arrival_s = detail::time_field(record, "t");
        if (const JsonValue* ns = record.find("ns")) {
          request.ns = static_cast<Namespace>(detail::integer_value(*ns, "\"ns\"", 0, kMaxJsonId));
        }
        if (const JsonValue* priority = record.find("pri")) {
          request.priority = static_cast<int32_t>(
              detail::integer_value(*priority, "\"pri\"", kMinPriority, kMaxPriority));
        }
        if (const JsonValue* out = record.find("out")) {
          request.output_tokens =
              static_cast<uint32_t>(detail::integer_value(*out, "\"out\"", 0, kMaxInputTokens));
        }
        if (const JsonValue* parent = record.find("parent")) {
          const auto parent_id =
              static_cast<uint64_t>(detail::integer_value(*parent, "\"parent\"", 0, kMaxJsonId));
          const auto it = index_of_id.find(parent_id);
          if (it == index_of_id.end()) {
            throw RecordError(
                fmt::format("parent {} is not an earlier request of this trace", parent_id));
          }
          request.parent = it->second;
          if (trace.requests[it->second].ns != request.ns) {
            throw RecordError(fmt::format("parent {} is in namespace {}, this request in {}",
                                          parent_id, trace.requests[it->second].ns, request.ns));
          }
        }
        segments.clear();
        if (const JsonValue* segs = record.find("segs")) {
          if (!segs->is_array())
            throw RecordError("\"segs\" must be an array of [content, length]");
          for (std::size_t i = 0; i < segs->items().size(); ++i) {
            const JsonValue& seg = segs->items()[i];
            if (!seg.is_array() || seg.items().size() != 2) {
              throw RecordError(fmt::format("segs[{}] must be a pair [content, length]", i));
            }
            const int64_t content = detail::integer_value(
                seg.items()[0], fmt::format("segs[{}] content", i), 0, kMaxJsonId);
            const int64_t length = detail::integer_value(
                seg.items()[1], fmt::format("segs[{}] length", i), 1, kMaxInputTokens);
            segments.push_back(
                {content_key(ContentDomain::kNative, 0, static_cast<uint64_t>(content)),
                 static_cast<uint32_t>(length)});
          }
        } else if (request.parent == kNoParent) {
          throw RecordError("a request needs \"segs\", \"parent\" or both");
        }
        request.answer_key = content_key(ContentDomain::kAnswer, 0, request.id);
        const uint32_t index = builder.add(request, segments);
        index_of_id.emplace(request.id, index);
      });
  return trace;
}

}  // namespace radixkv::tools
