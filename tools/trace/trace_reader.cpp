#include "tools/trace/trace_reader.h"

#include <fmt/format.h>

#include <vector>

#include "tools/trace/json_fields.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

// The format suggested by a first record's keys, if any.
std::optional<TraceFormat> format_of_keys(const std::vector<std::string>& keys) {
  const auto has = [&](std::string_view key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  if (has("radixkv_trace") || has("segs")) return TraceFormat::kNative;
  if (has("hash_ids") && has("input_length")) {
    const bool bailian = has("chat_id") || has("parent_chat_id") || has("turn");
    return bailian ? TraceFormat::kBailian : TraceFormat::kMooncake;
  }
  if (has("requests") && has("block_size")) return TraceFormat::kAgentic;
  return std::nullopt;
}

// The format, from the input's first record (nothing is consumed).
TraceFormat guess_format(TraceInput& input) {
  const std::optional<TraceInput::Line> line = input.peek_record_line();
  if (!line) throw TraceError(input.name(), 0, "the file is empty");
  std::vector<std::string> keys;
  try {
    detail::od::parser parser;
    detail::od::document document = detail::checked(parser.iterate(
        line->text.data(), line->text.size(), line->text.size() + TraceInput::kPadding));
    detail::for_each_member(detail::record_object(document),
                            [&](std::string_view key, detail::od::value) {
                              if (keys.size() < 64) keys.emplace_back(key);
                            });
  } catch (const detail::JsonSyntaxError& e) {
    // A line that ends inside an object starts a document over several lines: only a session
    // file is one, and its reader reports what is wrong with it, if anything.
    if (e.code() == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) return TraceFormat::kAgentic;
    throw TraceError(input.name(), line->number, e.what());
  } catch (const detail::RecordError& e) {
    throw TraceError(input.name(), line->number, e.what());
  }
  if (const std::optional<TraceFormat> format = format_of_keys(keys)) return *format;
  throw TraceError(
      input.name(), line->number,
      fmt::format("cannot tell the trace format from the first record (keys: {}); pass --format "
                  "with one of {}",
                  keys.empty() ? std::string("none") : fmt::format("{}", fmt::join(keys, ", ")),
                  format_names()));
}

}  // namespace

uint32_t default_block_tokens(TraceFormat format) {
  return format == TraceFormat::kBailian ? kBailianBlockTokens : kMooncakeBlockTokens;
}

TraceFormat guess_format(const std::filesystem::path& path) {
  std::error_code ec;
  if (path != "-" && std::filesystem::is_directory(path, ec)) return TraceFormat::kAgentic;
  TraceInput input = TraceInput::open(path);
  return guess_format(input);
}

Trace read_trace(TraceInput& input, const ReadOptions& options) {
  const TraceFormat format = options.format ? *options.format : guess_format(input);
  const bool hash_ids = format == TraceFormat::kMooncake || format == TraceFormat::kBailian;
  if (options.block_tokens && !hash_ids) {
    throw UsageError(
        fmt::format("--block-tokens: only mooncake and bailian traces have hash ids "
                    "of a chosen size; {} is {}",
                    input.name(), format_name(format)));
  }
  switch (format) {
    case TraceFormat::kMooncake:
    case TraceFormat::kBailian:
      return parse_hash_ids(input, format,
                            options.block_tokens.value_or(default_block_tokens(format)),
                            options.skip_bad);
    case TraceFormat::kAgentic:
      return parse_agentic(input, options.skip_bad);  // one session file
    case TraceFormat::kNative:
      break;
  }
  return parse_native(input, options.skip_bad);
}

Trace read_trace(const std::filesystem::path& path, const ReadOptions& options) {
  std::error_code ec;
  if (path != "-" && std::filesystem::is_directory(path, ec) &&
      options.format.value_or(TraceFormat::kAgentic) == TraceFormat::kAgentic) {
    if (options.block_tokens) {
      throw UsageError(
          "--block-tokens: only mooncake and bailian traces have hash ids of a "
          "chosen size; a folder is read as agentic sessions");
    }
    return read_agentic_folder(path, options.skip_bad);
  }
  TraceInput input = TraceInput::open(path);
  return read_trace(input, options);
}

namespace {

Trace read_text(std::string_view text, const std::string& source, TraceFormat format,
                bool skip_bad) {
  TraceInput input = TraceInput::from_text(text, source);
  return read_trace(input, ReadOptions{format, skip_bad, std::nullopt});
}

}  // namespace

Trace parse_mooncake(std::string_view text, const std::string& source, bool skip_bad) {
  return read_text(text, source, TraceFormat::kMooncake, skip_bad);
}

Trace parse_native(std::string_view text, const std::string& source, bool skip_bad) {
  return read_text(text, source, TraceFormat::kNative, skip_bad);
}

Trace parse_agentic(std::string_view text, const std::string& source, bool skip_bad) {
  return read_text(text, source, TraceFormat::kAgentic, skip_bad);
}

}  // namespace radixkv::tools
