// The readers as strict JSON readers, the formats real traces come in (Bailian, agentic sessions
// with sub-agents and models), and reading in chunks.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "tests/sample_traces.h"
#include "tools/trace/trace_reader.h"
#include "tools/trace/units.h"

using namespace radixkv;
using namespace radixkv::tools;
using radixkv::testing::sample_trace;

namespace {

const std::string kMooncakeLine =
    R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})";

// The TraceError a read of `text` (format given) throws; fails the test when none is thrown.
TraceError error_of(const std::string& text, std::optional<TraceFormat> format) {
  try {
    TraceInput input = TraceInput::from_text(text, "t.jsonl");
    read_trace(input, ReadOptions{format, false, std::nullopt});
  } catch (const TraceError& e) {
    return e;
  }
  FAIL("no TraceError for: " << text);
  return TraceError("", 0, "");
}

Trace read_text(const std::string& text, ReadOptions options = {}) {
  TraceInput input = TraceInput::from_text(text, "t.jsonl");
  return read_trace(input, options);
}

}  // namespace

TEST_CASE("json: what is not JSON is refused as invalid JSON, with its line") {
  const char* bad[] = {
      R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2,]})",
      R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2],})",
      R"({"timestamp": 00, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})",
      R"({"timestamp": NaN, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})",
      R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1 2]})",
      R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]} x)",
      R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]} {})",
      R"({timestamp: 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})",
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"note\": \"a\tb\", "
      "\"hash_ids\": [1, 2]}",
      R"({"timestamp": 0, "input_length": 600, "output_length": 5, "note": "\x", "hash_ids": [1, 2]})",
      // Values nobody reads are checked too.
      R"({"timestamp": 0, "input_length": 600, "output_length": 5, "extra": tru, "hash_ids": [1, 2]})",
      R"({"timestamp": 0, "input_length": 600, "output_length": 5, "extra": [1, {"a": -}], "hash_ids": [1, 2]})",
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"s\": \"\xff\", "
      "\"hash_ids\": [1, 2]}",
  };
  for (const char* record : bad) {
    CAPTURE(record);
    const TraceError e = error_of(kMooncakeLine + "\n\n" + record + "\n", TraceFormat::kMooncake);
    CHECK(e.line() == 3);
    CHECK(e.reason().find("invalid JSON") != std::string::npos);
  }
}

TEST_CASE("json: a key twice in one record is refused, wherever it is") {
  struct Case {
    std::string record, key;
  };
  const Case cases[] = {
      {R"({"timestamp": 0, "timestamp": 5, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})",
       "timestamp"},
      {R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "x": 1, "x": 2})",
       "x"},
      {R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "meta": {"a": 1, "a": 1}})",
       "a"},
      // An escaped key is the same key.
      {R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "\u0074imestamp": 1})",
       "timestamp"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.record);
    const TraceError e = error_of(c.record, TraceFormat::kMooncake);
    CHECK(e.reason() == "the key \"" + c.key + "\" appears twice");
  }
  // The same key in two different objects of a record is fine.
  CHECK(
      read_text(
          R"({"timestamp": 0, "input_length": 16, "output_length": 5, "hash_ids": [1], "a": {"k": 1}, "b": {"k": 2}})")
          .requests.size() == 1);
}

TEST_CASE("json: numbers too large, fractional or of the wrong type say which") {
  struct Case {
    std::string value, reason;
  };
  const Case cases[] = {
      {"100000000000000000000", "\"input_length\" is 100000000000000000000, outside [1, 16777216]"},
      {"18446744073709551616", "\"input_length\" is 18446744073709551616, outside [1, 16777216]"},
      {"16777217", "\"input_length\" is 16777217, outside [1, 16777216]"},
      {"-3", "\"input_length\" is -3, outside [1, 16777216]"},
      {"10.5", "\"input_length\" must be a whole number, got 10.5"},
      {"1e3", "\"input_length\" must be a whole number, got 1e3"},
      {"\"ten\"", "\"input_length\" must be a whole number, got a string"},
      {"[10]", "\"input_length\" must be a whole number, got an array"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.value);
    const std::string record = R"({"timestamp": 0, "input_length": )" + c.value +
                               R"(, "output_length": 5, "hash_ids": [1]})";
    CHECK(error_of(record, TraceFormat::kMooncake).reason() == c.reason);
  }
  // Hash ids span the whole unsigned 64-bit range (Bailian's are 64-bit hashes).
  const Trace trace = read_text(
      R"({"timestamp": 0, "input_length": 16, "output_length": 5, "hash_ids": [18446744073709551615]})");
  CHECK(trace.requests.size() == 1);
}

TEST_CASE("formats: a byte order mark is skipped, and the first record's own error is reported") {
  const std::string bom = "\xEF\xBB\xBF";
  const Trace trace = read_text(bom + kMooncakeLine + "\n");  // guessed through the mark
  CHECK(trace.format == TraceFormat::kMooncake);
  CHECK(trace.requests.size() == 1);
  CHECK(read_text(bom + kMooncakeLine, {TraceFormat::kMooncake, false, {}}).requests.size() == 1);
  // A malformed first record: its own problem and line, not "cannot tell the trace format".
  const TraceError e =
      error_of("\n" + bom + "{\"timestamp\": 0,, \"input_length\": 1}\n", std::nullopt);
  CHECK(e.line() == 2);
  CHECK(e.reason().find("invalid JSON") != std::string::npos);
  CHECK(error_of("[1, 2]\n", std::nullopt).reason() == "expected a JSON object, got an array");
  // A valid record of no known format still says so, with its keys.
  const TraceError unknown = error_of(R"({"prompt": "hi"})", std::nullopt);
  CHECK(unknown.reason().find("cannot tell the trace format") != std::string::npos);
  CHECK(unknown.reason().find("prompt") != std::string::npos);
  CHECK(error_of("  \n\n", std::nullopt).reason() == "the file is empty");
}

TEST_CASE("formats: lines are read in chunks, whatever their length, with CRLF and blank lines") {
  // Three MiB of records, one of them longer than a chunk, so lines straddle every boundary.
  std::string text;
  uint64_t records = 0, tokens = 0;
  for (uint32_t i = 0; text.size() < 3 * TraceInput::kChunkBytes; ++i) {
    const uint32_t blocks = 1 + i % 13;
    std::string ids = "0";
    for (uint32_t b = 1; b < blocks; ++b) ids += fmt::format(",{}", b);
    // Record 7 carries a note longer than a chunk.
    const std::string note(i == 7 ? TraceInput::kChunkBytes + 100 : 0, 'x');
    text += fmt::format(
        R"({{"timestamp": {}, "note": "{}", "input_length": {}, "output_length": 1, "hash_ids": [{}]}})",
        i, note, blocks * 512, ids);
    text += i % 5 == 0 ? "\r\n\n" : "\n";
    ++records;
    tokens += blocks * 512;
  }
  const Trace trace = read_text(text);
  CHECK(trace.requests.size() == records);
  CHECK(trace.input_tokens() == tokens);
  // An error far into the text still names its line.
  const TraceError e = error_of(text + "{\"timestamp\": 1}\n", TraceFormat::kMooncake);
  CHECK(e.line() == records + records / 5 + (records % 5 != 0) + 1);
  CHECK(e.reason() == "missing field \"input_length\"");
}

TEST_CASE("bailian: seconds, 16-token blocks, request types as classes, --block-tokens") {
  const std::string text =
      R"({"chat_id": 1, "parent_chat_id": -1, "timestamp": 1.5, "input_length": 40, "output_length": 3, "type": "text", "turn": 1, "hash_ids": [7, 8, 9]}
{"chat_id": 2, "parent_chat_id": 1, "timestamp": 2.25, "input_length": 64, "output_length": 3, "type": "search", "turn": 2, "hash_ids": [7, 8, 10, 11]}
{"chat_id": 3, "parent_chat_id": -1, "timestamp": 3, "input_length": 16, "output_length": 1, "type": "text", "turn": 1, "hash_ids": [7]}
)";
  const Trace trace = read_text(text);
  CHECK(trace.format == TraceFormat::kBailian);
  REQUIRE(trace.requests.size() == 3);
  CHECK(trace.requests[0].arrival_s == 1.5);  // seconds, where Mooncake writes milliseconds
  CHECK(trace.requests[1].arrival_s == 2.25);
  CHECK(trace.class_names == std::vector<std::string>{"", "text", "search"});
  CHECK(trace.requests[0].request_class == 1);
  CHECK(trace.requests[1].request_class == 2);
  CHECK(trace.requests[2].request_class == 1);
  // Blocks 7 and 8 are the same 32 tokens in both prompts.
  TokenExpander expander(trace);
  const auto a = expander.expand(0);
  const std::vector<TokenId> first(a.begin(), a.end());
  const auto b = expander.expand(1);
  CHECK(std::equal(first.begin(), first.begin() + 32, b.begin()));
  CHECK(!std::equal(first.begin() + 32, first.end(), b.begin() + 32));
  // Another block size changes what the ids must count.
  const TraceError e = [&] {
    try {
      read_text(text, {std::nullopt, false, 32});
    } catch (const TraceError& error) {
      return error;
    }
    FAIL("32-token blocks were accepted");
    return TraceError("", 0, "");
  }();
  CHECK(e.line() == 1);
  CHECK(e.reason().find("ceil(40/32) = 2") != std::string::npos);
  // Bailian's own fields are checked, not just skipped.
  CHECK(
      error_of(
          R"({"chat_id": 1, "parent_chat_id": -2, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": [7]})",
          std::nullopt)
          .reason() == "\"parent_chat_id\" is -2, outside [-1, 9223372036854775807]");
  CHECK(
      error_of(
          R"({"chat_id": 1, "timestamp": 1, "input_length": 16, "output_length": 1, "type": 4, "hash_ids": [7]})",
          TraceFormat::kBailian)
          .reason() == "\"type\" must be a string, got a number");
}

TEST_CASE("bailian: the hand-written sample") {
  const Trace trace = read_trace(sample_trace("bailian-style/handwritten.jsonl"));
  CHECK(trace.format == TraceFormat::kBailian);
  CHECK(trace.requests.size() == 10);
  CHECK(trace.input_tokens() == 1876);
  CHECK(trace.output_tokens() == 276);
  CHECK(trace.class_names == std::vector<std::string>{"", "text", "search", "image", "file"});
}

TEST_CASE("agentic: a session with sub-agents on another model, flattened on its clock") {
  const Trace trace = read_trace(sample_trace("agentic-coding/trace_0291.json"));
  // The file's own totals (combined_tokens: the parent agent and both sub-agents).
  CHECK(trace.requests.size() == 20 + 5 + 7);
  CHECK(trace.input_tokens() == 2'254'119);
  CHECK(trace.output_tokens() == 19'504);
  CHECK(trace.namespace_names ==
        std::vector<std::string>{"claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"});
  CHECK(trace.class_names == std::vector<std::string>{"", "n"});
  std::size_t haiku = 0;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    if (i > 0) CHECK(trace.requests[i - 1].arrival_s <= trace.requests[i].arrival_s);
    if (trace.requests[i].ns != 1) continue;
    ++haiku;
    // Sub-agent requests start at their markers: 1148.013 s and 1180.553 s.
    CHECK(trace.requests[i].arrival_s >= 1148.013);
  }
  CHECK(haiku == 12);
}

TEST_CASE("agentic: sub-agent entries that make no sense are refused, naming the entry") {
  struct Case {
    std::string requests, reason;
  };
  const Case cases[] = {
      {R"([{"t": 0, "type": "subagent"}])", "requests[0]: missing field \"requests\""},
      {R"([{"type": "subagent", "requests": []}])", "requests[0]: missing field \"t\""},
      {R"([{"t": 0, "in": 4, "out": 1, "hash_ids": [1], "requests": []}])",
       "requests[0]: only an entry of \"type\": \"subagent\" holds \"requests\""},
      {R"([{"t": 0, "type": "subagent", "in": 4, "requests": []}])",
       "requests[0]: a sub-agent entry has no prompt of its own: \"in\" and \"hash_ids\" belong to "
       "its requests"},
      {R"([{"t": 0, "type": "subagent", "requests": [{"t": 1, "in": 4, "out": 1}]}])",
       "requests[0].requests[0]: missing field \"hash_ids\""},
      {R"([{"t": 0, "in": 4, "out": 1, "hash_ids": [1], "model": 7}])",
       "requests[0]: \"model\" must be a string, got a number"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.requests);
    const std::string session = R"({"block_size": 4, "requests": )" + c.requests + "}";
    CHECK(error_of(session, TraceFormat::kAgentic).reason() == c.reason);
  }
  // Skipped under --skip-bad: a bad sub-agent is left out with all its requests.
  const Trace trace = read_text(
      R"({"block_size": 4, "requests": [{"t": 0, "in": 4, "out": 1, "hash_ids": [1]},
          {"type": "subagent", "requests": [{"t": 1, "in": 4, "out": 1, "hash_ids": [2]}]},
          {"t": 2, "type": "subagent", "requests": [{"t": 1, "in": 4, "out": 1, "hash_ids": [3]}, {"t": 2}]}]})",
      {TraceFormat::kAgentic, true, {}});
  CHECK(trace.requests.size() == 2);
  CHECK(trace.skipped_records == 2);
  CHECK(trace.requests[1].arrival_s == 3);
}

TEST_CASE("agentic: the block size may follow the requests") {
  const Trace trace = read_text(
      R"({"requests": [{"t": 0, "in": 9, "out": 1, "hash_ids": [1, 2]}], "block_size": 4})",
      {TraceFormat::kAgentic, false, {}});
  REQUIRE(trace.requests.size() == 1);
  CHECK(trace.requests[0].input_tokens == 9);
}

TEST_CASE("formats: --block-tokens applies to hash-id formats only") {
  CHECK_THROWS_WITH_AS(
      read_text("{\"radixkv_trace\": 1}\n{\"id\": 0, \"t\": 0, \"segs\": [[1, 4]]}\n",
                {std::nullopt, false, 16}),
      doctest::Contains("--block-tokens"), UsageError);
}
