#include <algorithm>
#include <vector>

#include "tools/trace/reader_util.h"
#include "tools/trace/trace_reader.h"

namespace radixkv::tools {

using detail::RecordError;

namespace {

struct AgenticRequest {
  double t = 0.0;
  uint32_t file = 0;
  uint32_t index = 0;  // within its file
  uint32_t input = 0;
  uint32_t output = 0;
  uint32_t block_size = 0;
  std::vector<int64_t> hash_ids;
};

// Appends the requests of one session file. A bad request is skipped (counted) under skip_bad; a
// file that is not a session at all is skipped as a whole.
void read_session(std::string_view text, const std::string& source, uint32_t file, bool skip_bad,
                  uint64_t& skipped, std::vector<AgenticRequest>& out) {
  auto fail = [&](std::size_t offset, const std::string& reason) {
    if (!skip_bad) throw TraceError(source, position_of(text, offset).line, reason);
    ++skipped;
  };
  JsonValue session;
  uint32_t block_size = 0;
  try {
    session = parse_json(text);
    if (!session.is_object()) throw RecordError("a session file must hold one JSON object");
    block_size =
        static_cast<uint32_t>(detail::integer_field(session, "block_size", 1, kMaxInputTokens));
    detail::array_field(session, "requests");
  } catch (const JsonError& e) {
    const TextPosition at = position_of(text, e.offset());
    fail(e.offset(), fmt::format("column {}: invalid JSON: {}", at.column, e.what()));
    return;
  } catch (const RecordError& e) {
    fail(0, e.what());
    return;
  }
  const auto& requests = session.find("requests")->items();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const JsonValue& record = requests[i];
    try {
      if (!record.is_object()) throw RecordError("a request must be a JSON object");
      AgenticRequest request;
      request.t = detail::time_field(record, "t");
      request.file = file;
      request.index = static_cast<uint32_t>(i);
      request.block_size = block_size;
      request.input =
          static_cast<uint32_t>(detail::integer_field(record, "in", 1, kMaxInputTokens));
      request.output =
          static_cast<uint32_t>(detail::integer_field(record, "out", 0, kMaxInputTokens));
      const JsonValue& ids = detail::array_field(record, "hash_ids");
      const std::size_t blocks = request.input / block_size;
      if (ids.items().size() != blocks) {
        throw RecordError(
            fmt::format("requests[{}]: \"hash_ids\" has {} ids, but in = {} holds floor({}/{}) = "
                        "{} full blocks",
                        i, ids.items().size(), request.input, request.input, block_size, blocks));
      }
      for (std::size_t b = 0; b < blocks; ++b) {
        request.hash_ids.push_back(detail::integer_value(
            ids.items()[b], fmt::format("requests[{}].hash_ids[{}]", i, b), 0, INT64_MAX));
      }
      out.push_back(std::move(request));
    } catch (const RecordError& e) {
      const std::string reason = e.what();
      fail(record.offset(),
           reason.starts_with("requests[") ? reason : fmt::format("requests[{}]: {}", i, reason));
    }
  }
}

Trace build_trace(std::vector<AgenticRequest>& requests, const std::string& source,
                  uint64_t skipped) {
  std::stable_sort(requests.begin(), requests.end(),
                   [](const AgenticRequest& a, const AgenticRequest& b) { return a.t < b.t; });
  Trace trace;
  trace.source = source;
  trace.format = TraceFormat::kAgentic;
  trace.skipped_records = skipped;
  TraceBuilder builder(trace);
  std::vector<Segment> segments;
  for (const AgenticRequest& a : requests) {
    // One salt per file and request position: ids are local to their file.
    const uint64_t request_salt = (uint64_t{a.file} << 32) | a.index;
    segments.clear();
    for (int64_t id : a.hash_ids) {
      segments.push_back(
          {content_key(ContentDomain::kAgenticBlock, a.file, static_cast<uint64_t>(id)),
           a.block_size});
    }
    const uint32_t rest = a.input % a.block_size;
    if (rest > 0) segments.push_back({content_key(ContentDomain::kUnique, 0, request_salt), rest});
    TraceRequest request;
    request.id = request_salt;
    request.arrival_s = a.t;
    request.output_tokens = a.output;
    request.answer_key = content_key(ContentDomain::kAnswer, 1, request_salt);
    builder.add(request, segments);
  }
  return trace;
}

}  // namespace

Trace parse_agentic(std::string_view text, const std::string& source, bool skip_bad) {
  std::vector<AgenticRequest> requests;
  uint64_t skipped = 0;
  read_session(text, source, 0, skip_bad, skipped, requests);
  return build_trace(requests, source, skipped);
}

namespace detail {

Trace read_agentic_path(const std::filesystem::path& path, bool skip_bad) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(path)) {
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.is_regular_file() && entry.path().extension() == ".json") {
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw TraceError(path.string(), 0, "the folder holds no .json session file");
  } else {
    files.push_back(path);
  }
  std::vector<AgenticRequest> requests;
  uint64_t skipped = 0;
  for (std::size_t f = 0; f < files.size(); ++f) {
    const std::string text = read_file(files[f]);
    read_session(text, files[f].string(), static_cast<uint32_t>(f), skip_bad, skipped, requests);
  }
  return build_trace(requests, path.string(), skipped);
}

}  // namespace detail

}  // namespace radixkv::tools
