// Reading traces: the native format (docs/trace_format.md), hash-id JSONL (Mooncake, Bailian) and
// agentic-coding sessions (one file, or a folder of them); docs/trace_format.md describes each.
//
// Streaming: JSONL is read one line at a time (trace_input.h) and parsed in place with simdjson's
// On-Demand API, so memory is the compact trace model (trace.h), not the file. A session file is
// one JSON document, read whole but parsed without a tree. "-" reads standard input (a pipe,
// process substitution) the same way.
//
// Every malformed record stops the read with TraceError "file:line: reason", unless skip_bad is
// set: then the record is left out, counted in Trace::skipped_records, and nothing of it reaches
// the trace. With no format given, it is guessed from the first record's keys; a first record that
// is not valid JSON is reported as it is, with its line.
//
// Hash-id formats: each id is a block of block_tokens tokens (default 512 for Mooncake, 16 for
// Bailian) and len(hash_ids) == ceil(input_length / block_tokens); the last block may be partial
// (its first tokens are the block's first tokens). Mooncake timestamps are ms, Bailian's seconds.
// Agentic: hash_ids cover the floor(in / block_size) full blocks; the rest of `in` is filler no
// other request shares. Ids are salted per file; a folder's sessions are merged by their own
// clocks (`t`, seconds from each session's start), ties kept in file-name then document order.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "tools/trace/trace.h"
#include "tools/trace/trace_input.h"

namespace radixkv::tools {

inline constexpr uint32_t kMooncakeBlockTokens = 512;
inline constexpr uint32_t kBailianBlockTokens = 16;
// Tokens per hash id when --block-tokens is not given.
uint32_t default_block_tokens(TraceFormat format);

struct ReadOptions {
  std::optional<TraceFormat> format;  // guessed when absent
  bool skip_bad = false;
  // Hash-id formats only: tokens per id (default_block_tokens when absent).
  std::optional<uint32_t> block_tokens;
};

// `path` "-" is standard input.
Trace read_trace(const std::filesystem::path& path, const ReadOptions& options = {});
Trace read_trace(TraceInput& input, const ReadOptions& options = {});
// Guesses the format of a file or folder; throws TraceError saying why it cannot.
TraceFormat guess_format(const std::filesystem::path& path);

// The readers over an input, from its current line.
Trace parse_native(TraceInput& input, bool skip_bad);
Trace parse_hash_ids(TraceInput& input, TraceFormat format, uint32_t block_tokens, bool skip_bad);
Trace parse_agentic(TraceInput& input, bool skip_bad);  // one session
Trace read_agentic_folder(const std::filesystem::path& path, bool skip_bad);

// The readers on text in memory; `source` names it in errors.
Trace parse_mooncake(std::string_view text, const std::string& source, bool skip_bad = false);
Trace parse_native(std::string_view text, const std::string& source, bool skip_bad = false);
Trace parse_agentic(std::string_view text, const std::string& source, bool skip_bad = false);

}  // namespace radixkv::tools
