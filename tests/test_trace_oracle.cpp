// The hash-id reader against a naive one: each line parsed by nlohmann::json and turned into
// requests and segments by the rules of docs/trace_format.md, field by field. It guards the
// reader's fast paths (one read of a whole file, room reserved from its size, the segments
// written in place) against any change in what a trace reads as, on the real samples, several
// copies of them (past one chunk of TraceInput), and from a file and from memory alike.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/sample_traces.h"
#include "tools/trace/trace_reader.h"

namespace fs = std::filesystem;
using namespace radixkv;
using namespace radixkv::tools;
using radixkv::testing::sample_trace;

namespace {

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `text` written to a file of its own, removed at the end.
struct TempFile {
  explicit TempFile(const std::string& text) {
    static int counter = 0;
    path = fs::temp_directory_path() / ("radixkv_trace_oracle_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(counter++) + ".jsonl");
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { fs::remove(path); }
  fs::path path;
};

// The trace a hash-id JSONL text describes, by the format's rules alone (no part of the reader
// but content_key and the class numbering, which the rules name).
Trace naive_hash_ids(const std::string& text, TraceFormat format, uint32_t block_tokens) {
  Trace trace;
  trace.format = format;
  std::istringstream lines(text);
  std::string line;
  uint64_t number = 0;
  std::vector<std::pair<uint64_t, uint64_t>> chain_start;  // chat_id -> first chat_id
  std::vector<uint64_t> session_keys;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json record = nlohmann::json::parse(line);
    TraceRequest r;
    r.id = number;
    r.arrival_s = record["timestamp"].get<double>() * (format == TraceFormat::kBailian ? 1 : 1e-3);
    r.input_tokens = record["input_length"].get<uint32_t>();
    r.output_tokens = record["output_length"].get<uint32_t>();
    r.first_segment = static_cast<uint32_t>(trace.segments.size());
    uint32_t left = r.input_tokens;
    for (const auto& id : record["hash_ids"]) {
      const uint32_t length = std::min(left, block_tokens);
      trace.segments.push_back(
          {content_key(ContentDomain::kMooncakeBlock, 0, id.get<uint64_t>()), length});
      left -= length;
      ++r.num_segments;
    }
    if (record.contains("type")) {
      const auto type = record["type"].get<std::string>();
      auto known = std::find(trace.class_names.begin(), trace.class_names.end(), type);
      if (known == trace.class_names.end()) {
        trace.class_names.push_back(type);
        known = trace.class_names.end() - 1;
      }
      r.request_class = static_cast<uint16_t>(known - trace.class_names.begin());
    }
    if (record.contains("chat_id")) {
      const auto chat = record["chat_id"].get<uint64_t>();
      const int64_t parent = record.value("parent_chat_id", int64_t{-1});
      uint64_t first = chat;
      for (const auto& [c, f] : chain_start) {
        if (parent >= 0 && c == static_cast<uint64_t>(parent)) first = f;
      }
      chain_start.emplace_back(chat, first);
      auto key = std::find(session_keys.begin(), session_keys.end(), first);
      if (key == session_keys.end()) {
        session_keys.push_back(first);
        key = session_keys.end() - 1;
      }
      r.session = static_cast<uint32_t>(key - session_keys.begin()) + 1;
    }
    trace.requests.push_back(r);
  }
  trace.sessions = static_cast<uint32_t>(session_keys.size());
  return trace;
}

void check_same(const Trace& read, const Trace& expected) {
  CHECK(read.format == expected.format);
  CHECK(read.skipped_records == 0);
  CHECK(read.class_names == expected.class_names);
  CHECK(read.sessions == expected.sessions);
  REQUIRE(read.requests.size() == expected.requests.size());
  REQUIRE(read.segments.size() == expected.segments.size());
  std::size_t wrong_requests = 0, wrong_segments = 0;
  for (std::size_t i = 0; i < read.requests.size(); ++i) {
    const TraceRequest &a = read.requests[i], &b = expected.requests[i];
    const bool same = a.id == b.id && a.arrival_s == b.arrival_s && a.ns == b.ns &&
                      a.input_tokens == b.input_tokens && a.output_tokens == b.output_tokens &&
                      a.parent == b.parent && a.first_segment == b.first_segment &&
                      a.num_segments == b.num_segments && a.priority == b.priority &&
                      a.request_class == b.request_class && a.session == b.session &&
                      a.agent == b.agent;
    if (!same && wrong_requests++ == 0) FAIL_CHECK("request " << i << " differs");
  }
  for (std::size_t s = 0; s < read.segments.size(); ++s) {
    const bool same = read.segments[s].key == expected.segments[s].key &&
                      read.segments[s].length == expected.segments[s].length;
    if (!same && wrong_segments++ == 0) FAIL_CHECK("segment " << s << " differs");
  }
  CHECK(wrong_requests == 0);
  CHECK(wrong_segments == 0);
}

// Reads `text` from a file and from memory; both must be the naive reading.
void check_reads(const std::string& text, TraceFormat format, uint32_t block_tokens) {
  const Trace expected = naive_hash_ids(text, format, block_tokens);
  const TempFile file(text);
  SUBCASE("from a file") { check_same(read_trace(file.path), expected); }
  SUBCASE("from memory") {
    TraceInput input = TraceInput::from_text(text, "t.jsonl");
    check_same(read_trace(input), expected);
  }
}

}  // namespace

TEST_CASE("oracle: the Mooncake sample, once and five times over, reads as nlohmann reads it") {
  const std::string once = file_text(sample_trace("mooncake/synthetic_trace.jsonl"));
  SUBCASE("once") { check_reads(once, TraceFormat::kMooncake, kMooncakeBlockTokens); }
  SUBCASE("five times, past a chunk") {
    std::string five;
    for (int k = 0; k < 5; ++k) five += once;
    REQUIRE(five.size() > 4 * TraceInput::kChunkBytes);
    check_reads(five, TraceFormat::kMooncake, kMooncakeBlockTokens);
  }
}

TEST_CASE("oracle: the Bailian sample's types and chat chains read as nlohmann reads them") {
  const std::string text = file_text(sample_trace("bailian-style/handwritten.jsonl"));
  check_reads(text, TraceFormat::kBailian, kBailianBlockTokens);
}

TEST_CASE("oracle: short records, blank and CRLF lines, and no final newline") {
  // Records far shorter than the reader's guess of a record's size, so that room reserved from
  // the file's size is never too little, and ids of every width.
  std::string text;
  for (int i = 0; i < 6000; ++i) {
    text += fmt::format(R"({{"timestamp":{},"input_length":{},"output_length":0,"hash_ids":[{}]}})",
                        i, 1 + i % 512, i % 10 == 0 ? uint64_t{1} << 63 : uint64_t(i % 7));
    text += i % 3 == 0 ? "\r\n" : i % 5 == 0 ? "\n\n" : "\n";
  }
  text += R"({"timestamp":9,"input_length":1024,"output_length":1,"hash_ids":[0,1]})";
  check_reads(text, TraceFormat::kMooncake, kMooncakeBlockTokens);
}
