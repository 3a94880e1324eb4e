// Reading traces: the native format (docs/trace_format.md), Mooncake JSONL and agentic-coding JSON
// (one file, or a folder of them), as docs/design.md describes them.
//
// Every malformed record stops the read with TraceError "file:line: reason", unless skip_bad is
// set: then the record is left out, counted in Trace::skipped_records, and nothing of it reaches
// the trace. With no format given, it is guessed from the path and the first record.
//
// Mooncake: each hash id is a 512-token block and len(hash_ids) == ceil(input_length / 512); the
// last block may be partial (its first tokens are the block's first tokens). Timestamps are ms.
// Agentic: hash_ids cover the floor(in / block_size) full blocks; the rest of `in` is filler no
// other request shares. Ids are salted per file; a folder's sessions are merged by their own
// clocks (`t`, seconds from each session's start), ties kept in file-name then request order.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "tools/trace/trace.h"

namespace radixkv::tools {

inline constexpr uint32_t kMooncakeBlockTokens = 512;

struct ReadOptions {
  std::optional<TraceFormat> format;  // guessed when absent
  bool skip_bad = false;
};

Trace read_trace(const std::filesystem::path& path, const ReadOptions& options = {});
// Guesses the format of a file or folder; throws TraceError saying why it cannot.
TraceFormat guess_format(const std::filesystem::path& path);

// The readers on text in memory (one session for agentic); `source` names it in errors.
Trace parse_mooncake(std::string_view text, const std::string& source, bool skip_bad = false);
Trace parse_native(std::string_view text, const std::string& source, bool skip_bad = false);
Trace parse_agentic(std::string_view text, const std::string& source, bool skip_bad = false);

}  // namespace radixkv::tools
