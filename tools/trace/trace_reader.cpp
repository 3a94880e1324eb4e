#include "tools/trace/trace_reader.h"

#include <fstream>
#include <sstream>

#include "tools/trace/reader_util.h"

namespace radixkv::tools {

namespace detail {

Trace read_agentic_path(const std::filesystem::path& path, bool skip_bad);

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw TraceError(path.string(), 0, "no such file or folder");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw TraceError(path.string(), 0, "is a folder, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path.string(), 0, "cannot be opened for reading");
  std::string text;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size > 0) {
    text.resize(static_cast<std::size_t>(size));
    in.seekg(0);
    in.read(text.data(), size);
  }
  if (!in && size > 0) throw TraceError(path.string(), 0, "could not be read completely");
  return text;
}

}  // namespace detail

namespace {

// The format suggested by the keys of one parsed record, if any.
std::optional<TraceFormat> format_of_record(const JsonValue& record) {
  if (!record.is_object()) return std::nullopt;
  if (record.find("radixkv_trace") || record.find("segs")) return TraceFormat::kNative;
  if (record.find("hash_ids") && record.find("input_length")) return TraceFormat::kMooncake;
  if (record.find("requests") && record.find("block_size")) return TraceFormat::kAgentic;
  return std::nullopt;
}

// The format of a file's text, from its first record (or, for a pretty-printed session, the whole
// text); `source` names the file in the error.
TraceFormat guess_format_of_text(const std::string& text, const std::string& source) {
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) throw TraceError(source, 0, "the file is empty");
  std::size_t end = text.find('\n', start);
  if (end == std::string::npos) end = text.size();
  try {
    if (auto format =
            format_of_record(parse_json(std::string_view(text).substr(start, end - start)))) {
      return *format;
    }
  } catch (const JsonError&) {
    // The first line is not a whole JSON value: maybe a pretty-printed session file.
  }
  try {
    if (auto format = format_of_record(parse_json(text))) return *format;
  } catch (const JsonError&) {
  }
  throw TraceError(source, 0,
                   "cannot tell the trace format from the first record; pass --format "
                   "native|mooncake|agentic");
}

}  // namespace

TraceFormat guess_format(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return TraceFormat::kAgentic;
  return guess_format_of_text(detail::read_file(path), path.string());
}

Trace read_trace(const std::filesystem::path& path, const ReadOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec) &&
      options.format.value_or(TraceFormat::kAgentic) == TraceFormat::kAgentic) {
    return detail::read_agentic_path(path, options.skip_bad);
  }
  // A file is read once, for the guess and the parse alike.
  const std::string text = detail::read_file(path);
  const std::string source = path.string();
  const TraceFormat format = options.format ? *options.format : guess_format_of_text(text, source);
  switch (format) {
    case TraceFormat::kMooncake:
      return parse_mooncake(text, source, options.skip_bad);
    case TraceFormat::kAgentic:
      return parse_agentic(text, source, options.skip_bad);  // one session file
    case TraceFormat::kNative:
      break;
  }
  return parse_native(text, source, options.skip_bad);
}

}  // namespace radixkv::tools
