// Agentic-coding sessions (kv-cache-tester): one JSON document a file,
//   {"block_size": B, "requests": [entry, ...], ...}
// where an entry is a request {"t", "in", "out", "hash_ids", "model", "type", ...} or a sub-agent
// {"type": "subagent", "t", "requests": [entry, ...], ...} whose entries' t count from its own t.
// Sub-agents are flattened onto the session's clock (nesting allowed, kMaxSubagentDepth deep).
// A request's model is its namespace (KV of one model is of no use to another), its type its
// class. Each file is one session (TraceRequest::session); a sub-agent's requests carry its number
// (TraceRequest::agent), 1, 2, ... in the order the sub-agents' entries open in the file, nested
// ones included; the main agent's are 0. A session is read with simdjson On-Demand straight from
// the file's text: no parse tree.
#include <algorithm>
#include <vector>

#include "tools/trace/json_fields.h"
#include "tools/trace/trace_reader.h"

namespace radixkv::tools {

using detail::RecordError;

namespace {

constexpr int kMaxSubagentDepth = 16;

// One request as read, before the sessions are merged in time order.
struct AgenticRequest {
  double t = 0.0;  // relative to its agent until the enclosing sub-agent is complete
  uint32_t file = 0;
  uint32_t index = 0;  // position among the file's requests, in document order
  uint32_t input = 0;
  uint32_t output = 0;
  uint32_t block_size = 0;
  uint16_t request_class = 0;
  uint32_t agent = 0;  // 0: the session's main agent; k: its k-th sub-agent
  Namespace ns = 0;
  std::size_t first_id = 0;  // in Sessions::ids
  uint32_t num_ids = 0;
};

// Turns positions in a document into line numbers, counting newlines forward as the reader moves.
class LineCounter {
 public:
  LineCounter(std::string_view text, uint64_t first_line)
      : text_(text), counted_(0), line_(first_line) {}
  uint64_t line_at(const char* position) {
    const auto offset = static_cast<std::size_t>(
        std::clamp<std::ptrdiff_t>(position - text_.data(), 0, std::ptrdiff_t(text_.size())));
    if (offset < counted_) return line_;  // never backwards: keep the later line
    line_ += std::count(text_.begin() + counted_, text_.begin() + offset, '\n');
    counted_ = offset;
    return line_;
  }

 private:
  std::string_view text_;
  std::size_t counted_;
  uint64_t line_;
};

// Everything read so far, over all the files of a folder.
struct Sessions {
  Trace trace;
  TraceBuilder builder{trace};
  std::vector<AgenticRequest> requests;
  std::vector<uint64_t> ids;
};

// Reads one session document into `sessions`.
class SessionReader {
 public:
  SessionReader(Sessions& sessions, const std::string& source, uint32_t file, bool skip_bad)
      : s_(sessions), source_(source), file_(file), skip_bad_(skip_bad) {}

  void read(std::string_view text, uint64_t first_line);

 private:
  // An entry of a "requests" list while it is read: a request, or a sub-agent.
  struct Entry {
    AgenticRequest request;
    std::string_view type, model;
    bool has_t = false, has_in = false, has_out = false, has_ids = false, has_requests = false;
    std::size_t nested_first = 0;  // a sub-agent's first request in Sessions::requests
  };

  void read_entries(detail::od::value value, const std::string& path, int depth);
  void read_entry(detail::od::value value, const std::string& path, int depth);
  void read_member(std::string_view key, detail::od::value field, const std::string& path,
                   int depth, Entry& entry);
  void finish_subagent(const Entry& entry);
  void finish_request(Entry& entry);
  uint64_t line_of(detail::od::value& value) {
    const char* at = nullptr;
    if (value.current_location().get(at) == simdjson::SUCCESS) line_ = lines_->line_at(at);
    return line_;
  }

  Sessions& s_;
  const std::string& source_;
  uint32_t file_;
  bool skip_bad_;
  uint32_t block_size_ = 0;
  uint32_t next_index_ = 0;
  uint32_t next_agent_ = 0;
  LineCounter* lines_ = nullptr;
  uint64_t line_ = 0;  // the line of the latest value located: where a syntax error is reported
};

void SessionReader::read(std::string_view text, uint64_t first_line) {
  LineCounter lines(text, first_line);
  lines_ = &lines;
  line_ = first_line;
  const std::size_t first_request = s_.requests.size(), first_id = s_.ids.size();
  try {
    detail::od::parser parser;
    detail::od::document document = detail::checked(
        parser.iterate(text.data(), text.size(), text.size() + TraceInput::kPadding));
    if (detail::checked(document.type()) != detail::od::json_type::object) {
      throw RecordError("a session file must hold one JSON object");
    }
    // The block size first, wherever it stands: every request's hash ids are checked against it.
    detail::od::value block_size;
    if (const auto error = document.find_field_unordered("block_size").get(block_size)) {
      detail::require_field(error != simdjson::NO_SUCH_FIELD, "block_size");
      detail::throw_json_error(error);
    }
    block_size_ = static_cast<uint32_t>(
        detail::whole_number(block_size, "\"block_size\"", 1, kMaxInputTokens));
    document.rewind();
    bool has_requests = false;
    detail::for_each_member(detail::record_object(document),
                            [&](std::string_view key, detail::od::value value) {
                              line_of(value);
                              if (key == "requests") {
                                read_entries(value, "requests", 0);
                                has_requests = true;
                              } else {
                                detail::skip_value(value);
                              }
                            });
    detail::require_field(has_requests, "requests");
    detail::require_end(document);
  } catch (const TraceError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    // The session as a whole is malformed: under skip_bad, the file is left out entirely.
    if (!skip_bad_) throw TraceError(source_, line_, e.what());
    ++s_.trace.skipped_records;
    s_.requests.resize(first_request);
    s_.ids.resize(first_id);
  }
}

void SessionReader::read_entries(detail::od::value value, const std::string& path, int depth) {
  std::size_t i = 0;
  for (auto item : detail::array_value(value, detail::Label(path.c_str()))) {
    detail::od::value entry = detail::checked(std::move(item));
    const std::string entry_path = fmt::format("{}[{}]", path, i++);
    const uint64_t line = line_of(entry);
    const std::size_t requests = s_.requests.size(), ids = s_.ids.size();
    try {
      read_entry(entry, entry_path, depth);
    } catch (const detail::JsonSyntaxError&) {
      throw;  // the document cannot be read past this point: the whole session fails
    } catch (const TraceError&) {
      throw;
    } catch (const std::invalid_argument& e) {
      const std::string reason = e.what();
      if (!skip_bad_) {
        throw TraceError(
            source_, line,
            reason.starts_with("requests[") ? reason : fmt::format("{}: {}", entry_path, reason));
      }
      ++s_.trace.skipped_records;
      s_.requests.resize(requests);
      s_.ids.resize(ids);
    }
  }
}

void SessionReader::read_entry(detail::od::value value, const std::string& path, int depth) {
  if (detail::checked(value.type()) != detail::od::json_type::object) {
    throw RecordError("a request must be a JSON object");
  }
  Entry entry;
  entry.request.file = file_;
  entry.request.block_size = block_size_;
  entry.request.first_id = s_.ids.size();
  detail::for_each_member(detail::checked(value.get_object()),
                          [&](std::string_view key, detail::od::value field) {
                            read_member(key, field, path, depth, entry);
                          });
  if (entry.type == "subagent") {
    finish_subagent(entry);
  } else {
    finish_request(entry);
  }
}

void SessionReader::read_member(std::string_view key, detail::od::value field,
                                const std::string& path, int depth, Entry& entry) {
  AgenticRequest& request = entry.request;
  if (key == "t") {
    request.t = detail::time_value(field, "\"t\"");
    entry.has_t = true;
  } else if (key == "in") {
    request.input =
        static_cast<uint32_t>(detail::whole_number(field, "\"in\"", 1, kMaxInputTokens));
    entry.has_in = true;
  } else if (key == "out") {
    request.output =
        static_cast<uint32_t>(detail::whole_number(field, "\"out\"", 0, kMaxInputTokens));
    entry.has_out = true;
  } else if (key == "hash_ids") {
    std::size_t b = 0;
    for (auto item : detail::array_value(field, "\"hash_ids\"")) {
      s_.ids.push_back(detail::whole_number(detail::checked(std::move(item)),
                                            detail::Label("hash_ids", b++), 0, UINT64_MAX));
    }
    entry.has_ids = true;
  } else if (key == "type") {
    entry.type = detail::string_value(field, "\"type\"");
  } else if (key == "model") {
    entry.model = detail::string_value(field, "\"model\"");
  } else if (key == "requests") {
    if (depth + 1 > kMaxSubagentDepth) {
      throw RecordError(fmt::format("sub-agents are nested more than {} deep", kMaxSubagentDepth));
    }
    entry.nested_first = s_.requests.size();
    entry.request.agent = ++next_agent_;  // numbered where the entry's requests open
    read_entries(field, path + ".requests", depth + 1);
    entry.has_requests = true;
  } else {
    detail::skip_value(field);
  }
}

// A sub-agent's requests, read already, move onto the clock of the agent that started it.
void SessionReader::finish_subagent(const Entry& entry) {
  detail::require_field(entry.has_t, "t");
  detail::require_field(entry.has_requests, "requests");
  if (entry.has_in || entry.has_ids) {
    throw RecordError(
        "a sub-agent entry has no prompt of its own: \"in\" and \"hash_ids\" belong to its "
        "requests");
  }
  for (std::size_t r = entry.nested_first; r < s_.requests.size(); ++r) {
    s_.requests[r].t += entry.request.t;
    // Its own requests; those of sub-agents nested in it have their number already.
    if (s_.requests[r].agent == 0) s_.requests[r].agent = entry.request.agent;
  }
}

void SessionReader::finish_request(Entry& entry) {
  if (entry.has_requests) {
    throw RecordError("only an entry of \"type\": \"subagent\" holds \"requests\"");
  }
  detail::require_field(entry.has_t, "t");
  detail::require_field(entry.has_in, "in");
  detail::require_field(entry.has_out, "out");
  detail::require_field(entry.has_ids, "hash_ids");
  AgenticRequest& request = entry.request;
  request.num_ids = static_cast<uint32_t>(s_.ids.size() - request.first_id);
  const uint32_t blocks = request.input / block_size_;
  if (request.num_ids != blocks) {
    throw RecordError(
        fmt::format("\"hash_ids\" has {} ids, but in = {} holds floor({}/{}) = {} full blocks",
                    request.num_ids, request.input, request.input, block_size_, blocks));
  }
  request.index = next_index_++;
  request.ns = s_.builder.namespace_of(entry.model);
  request.request_class = s_.builder.class_of(entry.type);
  s_.requests.push_back(request);
}

// Merges the sessions by their clocks (ties in file, then document order) into the trace.
Trace build_trace(Sessions& sessions, const std::string& source) {
  std::vector<AgenticRequest>& requests = sessions.requests;
  std::stable_sort(requests.begin(), requests.end(),
                   [](const AgenticRequest& a, const AgenticRequest& b) { return a.t < b.t; });
  Trace& trace = sessions.trace;
  trace.source = source;
  trace.format = TraceFormat::kAgentic;
  std::vector<Segment> segments;
  for (const AgenticRequest& a : requests) {
    // One salt per file and request position: ids are local to their file.
    const uint64_t request_salt = (uint64_t{a.file} << 32) | a.index;
    segments.clear();
    for (std::size_t b = 0; b < a.num_ids; ++b) {
      segments.push_back(
          {content_key(ContentDomain::kAgenticBlock, a.file, sessions.ids[a.first_id + b]),
           a.block_size});
    }
    const uint32_t rest = a.input % a.block_size;
    if (rest > 0) segments.push_back({content_key(ContentDomain::kUnique, 0, request_salt), rest});
    TraceRequest request;
    request.id = request_salt;
    request.arrival_s = a.t;
    request.ns = a.ns;
    request.output_tokens = a.output;
    request.request_class = a.request_class;
    request.session = sessions.builder.session_of(a.file);
    request.agent = a.agent;
    sessions.builder.add(request, segments);
  }
  requests = {};
  sessions.ids = {};
  return std::move(trace);
}

}  // namespace

Trace parse_agentic(TraceInput& input, bool skip_bad) {
  Sessions sessions;
  const uint64_t first_line = input.line_number() + 1;
  SessionReader(sessions, input.name(), 0, skip_bad).read(input.read_all(), first_line);
  return build_trace(sessions, input.name());
}

Trace read_agentic_folder(const std::filesystem::path& path, bool skip_bad) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw TraceError(path.string(), 0, "the folder holds no .json session file");
  Sessions sessions;
  for (std::size_t f = 0; f < files.size(); ++f) {
    TraceInput input = TraceInput::open(files[f]);
    SessionReader(sessions, input.name(), static_cast<uint32_t>(f), skip_bad)
        .read(input.read_all(), 1);
  }
  return build_trace(sessions, path.string());
}

}  // namespace radixkv::tools
