#include <vector>

#include "tools/trace/reader_util.h"
#include "tools/trace/trace_reader.h"

namespace radixkv::tools {

using detail::RecordError;

Trace parse_mooncake(std::string_view text, const std::string& source, bool skip_bad) {
  Trace trace;
  trace.source = source;
  trace.format = TraceFormat::kMooncake;
  TraceBuilder builder(trace);
  std::vector<Segment> segments;
  detail::for_each_json_line(
      text, source, skip_bad, trace.skipped_records, [&](const JsonValue& record, uint64_t line) {
        TraceRequest request;
        request.id = line;
        request.arrival_s = detail::time_field(record, "timestamp") / 1000.0;
        const auto input = static_cast<uint32_t>(
            detail::integer_field(record, "input_length", 1, kMaxInputTokens));
        request.output_tokens = static_cast<uint32_t>(
            detail::integer_field(record, "output_length", 0, kMaxInputTokens));
        const JsonValue& ids = detail::array_field(record, "hash_ids");
        const std::size_t blocks = (input + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
        if (ids.items().size() != blocks) {
          throw RecordError(fmt::format(
              "\"hash_ids\" has {} ids, but input_length {} needs ceil({}/{}) = {} blocks",
              ids.items().size(), input, input, kMooncakeBlockTokens, blocks));
        }
        segments.clear();
        uint32_t left = input;
        for (std::size_t i = 0; i < blocks; ++i) {
          const int64_t id =
              detail::integer_value(ids.items()[i], fmt::format("hash_ids[{}]", i), 0, INT64_MAX);
          const uint32_t length = std::min(left, kMooncakeBlockTokens);
          segments.push_back(
              {content_key(ContentDomain::kMooncakeBlock, 0, static_cast<uint64_t>(id)), length});
          left -= length;
        }
        request.answer_key = content_key(ContentDomain::kAnswer, 0, line);
        builder.add(request, segments);
      });
  return trace;
}

}  // namespace radixkv::tools
