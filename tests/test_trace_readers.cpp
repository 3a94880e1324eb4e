// The three trace readers: hand-written inputs, malformed records, and the real samples in
// data/traces.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <regex>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "tests/sample_traces.h"
#include "tools/trace/trace_reader.h"

namespace fs = std::filesystem;
using namespace radixkv;
using namespace radixkv::tools;
using radixkv::testing::sample_trace;

namespace {

// A fresh folder under the temp dir, removed when the test ends.
struct TempDir {
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("radixkv_trace_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return path / name;
  }
  fs::path path;
};

std::vector<TokenId> expand(const Trace& trace, std::size_t i) {
  TokenExpander expander(trace);
  const auto tokens = expander.expand(i);
  return {tokens.begin(), tokens.end()};
}

// Catches the TraceError of `fn` and returns it (fails the test when nothing is thrown).
template <typename Fn>
TraceError trace_error(Fn&& fn) {
  try {
    fn();
  } catch (const TraceError& e) {
    return e;
  }
  FAIL("no TraceError was thrown");
  return TraceError("", 0, "");
}

}  // namespace

TEST_CASE("mooncake: blocks of 512 tokens, partial last block, shared ids share tokens") {
  const Trace trace = parse_mooncake(
      R"({"timestamp": 0, "input_length": 1000, "output_length": 3, "hash_ids": [7, 8]}
{"timestamp": 1500, "input_length": 512, "output_length": 0, "hash_ids": [7]}

{"timestamp": 2000, "input_length": 1025, "output_length": 1, "hash_ids": [7, 9, 10], "extra": "ignored"}
)",
      "m.jsonl");
  REQUIRE(trace.requests.size() == 3);
  CHECK(trace.format == TraceFormat::kMooncake);
  CHECK(trace.requests[0].input_tokens == 1000);
  CHECK(trace.requests[0].output_tokens == 3);
  CHECK(trace.requests[1].arrival_s == doctest::Approx(1.5));
  CHECK(trace.input_tokens() == 1000 + 512 + 1025);
  const auto a = expand(trace, 0), b = expand(trace, 1), c = expand(trace, 2);
  REQUIRE(a.size() == 1000);
  REQUIRE(b.size() == 512);
  REQUIRE(c.size() == 1025);
  // Block 7 is the first 512 tokens of all three; block 8 and block 9 differ.
  CHECK(std::equal(b.begin(), b.end(), a.begin()));
  CHECK(std::equal(b.begin(), b.end(), c.begin()));
  CHECK(!std::equal(a.begin() + 512, a.end(), c.begin() + 512));
  for (TokenId t : c) CHECK(t >= 0);
}

TEST_CASE("mooncake: malformed lines name file, line and reason, and --skip-bad counts them") {
  const std::string text =
      "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
      "{\"timestamp\": 1, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1]}\n"
      "{\"timestamp\": 2, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1,]}\n"
      "{\"timestamp\": 3, \"input_length\": 10, \"hash_ids\": [1]}\n"
      "[1, 2]\n"
      "{\"timestamp\": -4, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
      "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [-1]}\n"
      "{\"timestamp\": 6, \"input_length\": 10.5, \"output_length\": 1, \"hash_ids\": [1]}\n"
      "{\"timestamp\": 7, \"input_length\": 20, \"output_length\": 2, \"hash_ids\": [2]}\n";
  const TraceError e = trace_error([&] { parse_mooncake(text, "bad.jsonl"); });
  CHECK(e.file() == "bad.jsonl");
  CHECK(e.line() == 2);
  CHECK(e.reason().find("ceil(600/512) = 2") != std::string::npos);
  CHECK(std::string(e.what()).starts_with("bad.jsonl:2: "));

  const Trace trace = parse_mooncake(text, "bad.jsonl", /*skip_bad=*/true);
  CHECK(trace.skipped_records == 7);
  REQUIRE(trace.requests.size() == 2);
  CHECK(trace.requests[1].input_tokens == 20);

  // Each kind of problem gives its own reason.
  auto reason_of = [](const std::string& line) {
    return trace_error([&] { parse_mooncake(line, "x"); }).reason();
  };
  CHECK(reason_of(R"({"timestamp": 2, "input_length": 10, "output_length": 1, "hash_ids": [1,]})")
            .find("invalid JSON") != std::string::npos);
  CHECK(reason_of(R"({"timestamp": 3, "input_length": 10, "hash_ids": [1]})")
            .find("missing field \"output_length\"") != std::string::npos);
  CHECK(reason_of("[1, 2]").find("expected a JSON object") != std::string::npos);
  CHECK(reason_of(R"({"timestamp": -4, "input_length": 10, "output_length": 1, "hash_ids": [1]})")
            .find("negative") != std::string::npos);
  CHECK(reason_of(R"({"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [-1]})")
            .find("hash_ids[0]") != std::string::npos);
  CHECK(reason_of(R"({"timestamp": 6, "input_length": 10.5, "output_length": 1, "hash_ids": [1]})")
            .find("whole number") != std::string::npos);
  CHECK(reason_of(R"({"timestamp": 6, "input_length": 0, "output_length": 1, "hash_ids": []})")
            .find("outside") != std::string::npos);
}

TEST_CASE("agentic: full blocks from hash_ids, unique filler for the rest") {
  const std::string session = R"({"id": "s", "block_size": 4, "requests": [
    {"t": 0.0, "in": 9, "out": 2, "hash_ids": [1, 2]},
    {"t": 3.5, "in": 9, "out": 1, "hash_ids": [1, 2]},
    {"t": 4.0, "in": 12, "out": 1, "hash_ids": [1, 2, 3]}]})";
  const Trace trace = parse_agentic(session, "s.json");
  REQUIRE(trace.requests.size() == 3);
  CHECK(trace.format == TraceFormat::kAgentic);
  const auto a = expand(trace, 0), b = expand(trace, 1), c = expand(trace, 2);
  REQUIRE(a.size() == 9);
  REQUIRE(c.size() == 12);
  // Same blocks give the same 8 tokens; the 9th token is each request's own.
  CHECK(std::equal(a.begin(), a.begin() + 8, b.begin()));
  CHECK(a[8] != b[8]);
  CHECK(std::equal(a.begin(), a.begin() + 8, c.begin()));
}

TEST_CASE("agentic: malformed sessions and requests") {
  auto error_of = [](const std::string& text) {
    return trace_error([&] { parse_agentic(text, "s.json"); });
  };
  CHECK(error_of(R"({"block_size": 4})").reason().find("missing field \"requests\"") !=
        std::string::npos);
  CHECK(error_of(R"({"block_size": 0, "requests": []})").reason().find("block_size") !=
        std::string::npos);
  const TraceError e = error_of(
      "{\"block_size\": 4, \"requests\": [\n{\"t\": 0, \"in\": 8, \"out\": 1, \"hash_ids\": [1, "
      "2]},\n{\"t\": 1, \"in\": 8, \"out\": 1, \"hash_ids\": [1]}]}");
  CHECK(e.line() == 3);
  CHECK(e.reason().find("requests[1]") != std::string::npos);
  CHECK(e.reason().find("floor(8/4) = 2") != std::string::npos);
  CHECK(error_of("{\"block_size\": 4,\n \"requests\": [}").line() == 2);

  const Trace skipped = parse_agentic(
      R"({"block_size": 4, "requests": [{"t": 0, "in": 8, "out": 1, "hash_ids": [1, 2]},
         {"t": 1, "in": 8, "out": 1, "hash_ids": [1]}, "junk"]})",
      "s.json", /*skip_bad=*/true);
  CHECK(skipped.requests.size() == 1);
  CHECK(skipped.skipped_records == 2);
}

TEST_CASE("agentic folder: sessions merged by their own clocks, ids kept apart per file") {
  TempDir dir;
  dir.write("a.json",
            R"({"block_size": 2, "requests": [{"t": 0, "in": 4, "out": 1, "hash_ids": [1, 2]},
                                                         {"t": 10, "in": 4, "out": 1, "hash_ids": [1, 2]}]})");
  dir.write("b.json",
            R"({"block_size": 2, "requests": [{"t": 5, "in": 4, "out": 1, "hash_ids": [1, 2]}]})");
  dir.write("notes.txt", "not a session");
  const Trace trace = read_trace(dir.path);
  CHECK(trace.format == TraceFormat::kAgentic);
  REQUIRE(trace.requests.size() == 3);
  CHECK(trace.requests[0].arrival_s == 0);
  CHECK(trace.requests[1].arrival_s == 5);  // from b.json, between a's two requests
  CHECK(trace.requests[2].arrival_s == 10);
  const auto a0 = expand(trace, 0), b0 = expand(trace, 1), a1 = expand(trace, 2);
  CHECK(a0 == a1);  // same file, same ids
  CHECK(a0 != b0);  // same ids, other file: no shared block
  CHECK(a0[0] != b0[0]);

  // A bad file in a folder names that file and its line.
  dir.write("c.json", "{\"block_size\": 2,\n\"requests\": [{\"t\": 1}]}");
  const TraceError e = trace_error([&] { read_trace(dir.path); });
  CHECK(e.file() == (dir.path / "c.json").string());
  CHECK(e.line() == 2);
  CHECK(read_trace(dir.path, {std::nullopt, true, std::nullopt}).skipped_records == 1);
}

TEST_CASE("native: parents, answers, namespaces, priorities") {
  const Trace trace = parse_native(
      R"({"radixkv_trace": 1}
{"id": 10, "t": 0, "segs": [[1, 5], [2, 3]], "out": 4}
{"id": 11, "t": 1.5, "ns": 2, "pri": 90, "segs": [[1, 5]], "out": 0}
{"id": 12, "t": 2, "parent": 10, "segs": [[3, 2]], "out": 1, "kind": "chat"}
{"id": 13, "t": 3, "parent": 10, "segs": [[3, 2]], "out": 1, "kind": "regen"}
{"id": 14, "t": 4, "parent": 13}
)",
      "n.jsonl");
  REQUIRE(trace.requests.size() == 5);
  CHECK(trace.requests[1].ns == 2);
  CHECK(trace.requests[1].priority == 90);
  CHECK(trace.requests[0].priority == kDefaultPriority);
  CHECK(trace.requests[2].input_tokens == 8 + 4 + 2);
  CHECK(trace.requests[4].input_tokens == 14 + 1);
  const auto r10 = expand(trace, 0), r11 = expand(trace, 1), r12 = expand(trace, 2),
             r13 = expand(trace, 3), r14 = expand(trace, 4);
  // Content 1 is the same 5 tokens wherever it appears.
  CHECK(std::equal(r11.begin(), r11.end(), r10.begin()));
  // A turn continues its parent's prompt exactly.
  CHECK(std::equal(r10.begin(), r10.end(), r12.begin()));
  // A regenerated turn has the same prompt, and its own answer.
  CHECK(r12 == r13);
  CHECK(std::equal(r13.begin(), r13.end(), r14.begin()));
  CHECK(answer_key(trace.requests[2]) != answer_key(trace.requests[3]));
}

TEST_CASE("native: malformed records") {
  auto reason_of = [](const std::string& text) {
    return trace_error([&] { parse_native(text, "n.jsonl"); }).reason();
  };
  CHECK(reason_of(R"({"id": 1, "t": 0, "parent": 5, "segs": [[1, 2]]})").find("parent 5") !=
        std::string::npos);
  CHECK(reason_of(
            "{\"id\": 1, \"t\": 0, \"segs\": [[1, 2]]}\n{\"id\": 1, \"t\": 0, \"segs\": [[1, 2]]}")
            .find("appears twice") != std::string::npos);
  CHECK(reason_of(R"({"id": 1, "t": 0, "segs": [[1]]})").find("segs[0]") != std::string::npos);
  CHECK(reason_of(R"({"id": 1, "t": 0, "segs": [[1, 0]]})").find("segs[0] length") !=
        std::string::npos);
  CHECK(reason_of(R"({"id": 1, "t": 0})").find("needs \"segs\"") != std::string::npos);
  CHECK(reason_of(R"({"id": 1, "t": 0, "pri": 101, "segs": [[1, 2]]})").find("\"pri\"") !=
        std::string::npos);
  CHECK(reason_of(R"({"radixkv_trace": 2})").find("version 2") != std::string::npos);
  CHECK(reason_of("{\"id\": 1, \"t\": 0, \"segs\": [[1, 2]]}\n{\"radixkv_trace\": 1}")
            .find("first record") != std::string::npos);
  const TraceError e = trace_error([] {
    parse_native("{\"id\": 1, \"t\": 0, \"segs\": [[1, 2]]}\n\n{\"id\": 2, \"t\": 0, \"segs\": 7}",
                 "n.jsonl");
  });
  CHECK(e.line() == 3);
}

TEST_CASE("read_trace: format guessing and file errors") {
  TempDir dir;
  const auto m = dir.write(
      "m.jsonl", R"({"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1]})");
  const auto n =
      dir.write("n.jsonl", "{\"radixkv_trace\": 1}\n{\"id\": 0, \"t\": 0, \"segs\": [[1, 4]]}\n");
  const auto a = dir.write("a.json", "{\n  \"block_size\": 2,\n  \"requests\": []\n}\n");
  const auto x = dir.write("x.jsonl", "{\"hello\": 1}\n");
  CHECK(guess_format(m) == TraceFormat::kMooncake);
  CHECK(guess_format(n) == TraceFormat::kNative);
  CHECK(guess_format(a) == TraceFormat::kAgentic);  // pretty-printed over several lines
  CHECK(guess_format(dir.path) == TraceFormat::kAgentic);
  CHECK(trace_error([&] { guess_format(x); }).reason().find("--format") != std::string::npos);
  CHECK(
      trace_error([&] { read_trace(dir.path / "missing.jsonl"); }).reason().find("no such file") !=
      std::string::npos);
  // An explicit format wins over the guess, and then the records must fit it.
  CHECK_THROWS_AS(read_trace(m, {TraceFormat::kNative, false, std::nullopt}), TraceError);
}

TEST_CASE("real sample: Mooncake synthetic trace") {
  const fs::path path = sample_trace("mooncake/synthetic_trace.jsonl");
  const Trace trace = read_trace(path);
  CHECK(trace.format == TraceFormat::kMooncake);
  CHECK(trace.requests.size() == 3993);  // data/traces/README.md
  CHECK(trace.skipped_records == 0);
  // Input tokens equal the sum of input_length, read here with a regex instead of the reader.
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::regex field("\"input_length\": *([0-9]+)");
  uint64_t expected = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), field);
       it != std::sregex_iterator(); ++it) {
    expected += std::stoull((*it)[1]);
  }
  CHECK(trace.input_tokens() == expected);
  // README: average input 15,325 tokens.
  CHECK(static_cast<double>(trace.input_tokens()) / 3993 == doctest::Approx(15325).epsilon(0.001));
}

TEST_CASE("real sample: agentic-coding session") {
  const fs::path path = sample_trace("agentic-coding/trace_0026.json");
  const Trace trace = read_trace(path);
  CHECK(trace.format == TraceFormat::kAgentic);
  REQUIRE(trace.requests.size() == 3);
  // The file's own totals: parent_tokens.input 52760, output 5294.
  CHECK(trace.input_tokens() == 52760);
  CHECK(trace.output_tokens() == 5294);
  // The folder form, on a folder of this session alone: its neighbour trace_0291.json holds
  // sub-agents, which the reader does not read yet.
  TempDir dir;
  fs::copy_file(path, dir.path / path.filename());
  CHECK(read_trace(dir.path).requests.size() == 3);
}

namespace {

struct SessionOf {
  uint32_t session, agent;
  friend bool operator==(SessionOf, SessionOf) = default;
  friend std::ostream& operator<<(std::ostream& out, SessionOf s) {
    return out << "{session " << s.session << ", agent " << s.agent << "}";
  }
};

std::vector<SessionOf> sessions_of(const Trace& trace) {
  std::vector<SessionOf> out;
  for (const TraceRequest& r : trace.requests) out.push_back({r.session, r.agent});
  return out;
}

}  // namespace

TEST_CASE("sessions: an agentic file is a session, its sub-agents numbered where they open") {
  TempDir dir;
  // a.json: the main agent at 0 and 6; sub-agent 1 at 1 (its requests at 1 and 3) with sub-agent 2
  // nested in it (at 1 + 1 + 0.5); sub-agent 3 at 4. b.json: one request at 0.5.
  dir.write("a.json", R"({"block_size": 2, "requests": [
    {"t": 0, "in": 2, "out": 1, "hash_ids": [1]},
    {"t": 1, "type": "subagent", "requests": [
      {"t": 0, "in": 2, "out": 1, "hash_ids": [2]},
      {"t": 1, "type": "subagent", "requests": [{"t": 0.5, "in": 2, "out": 1, "hash_ids": [3]}]},
      {"t": 2, "in": 2, "out": 1, "hash_ids": [4]}]},
    {"t": 4, "type": "subagent", "requests": [{"t": 0, "in": 2, "out": 1, "hash_ids": [5]}]},
    {"t": 6, "in": 2, "out": 1, "hash_ids": [6]}]})");
  dir.write("b.json",
            R"({"block_size": 2, "requests": [{"t": 0.5, "in": 2, "out": 1, "hash_ids": [1]}]})");
  const Trace trace = read_trace(dir.path);
  std::vector<double> times;
  for (const TraceRequest& r : trace.requests) times.push_back(r.arrival_s);
  CHECK(times == std::vector<double>{0, 0.5, 1, 2.5, 3, 4, 6});
  // Sessions in order of first arrival: a's at 0, b's at 0.5.
  CHECK(trace.sessions == 2);
  CHECK(sessions_of(trace) ==
        std::vector<SessionOf>{{1, 0}, {2, 0}, {1, 1}, {1, 2}, {1, 1}, {1, 3}, {1, 0}});
  // One file read alone is session 1.
  const Trace one = read_trace(dir.path / "b.json");
  CHECK(sessions_of(one) == std::vector<SessionOf>{{1, 0}});
}

TEST_CASE("sessions: the recorded session's two sub-agents") {
  const Trace trace = read_trace(sample_trace("agentic-coding/trace_0291.json"));
  CHECK(trace.sessions == 1);
  std::map<uint32_t, std::size_t> per_agent;
  for (const TraceRequest& r : trace.requests) {
    CHECK(r.session == 1);
    ++per_agent[r.agent];
    // The sub-agents run on the other model (namespace 1), the main agent on its own.
    CHECK((r.agent != 0) == (r.ns == 1));
  }
  // The file's sub-agent entries: 5 requests from 1148.013 s, then 7 from 1180.553 s.
  CHECK(per_agent == std::map<uint32_t, std::size_t>{{0, 20}, {1, 5}, {2, 7}});
}

TEST_CASE("sessions: a Bailian chat chain is a session, and Mooncake names none") {
  const std::string text =
      R"({"chat_id": 1, "parent_chat_id": -1, "timestamp": 1, "input_length": 16, "output_length": 1, "hash_ids": [7]}
{"chat_id": 2, "parent_chat_id": 1, "timestamp": 2, "input_length": 16, "output_length": 1, "hash_ids": [7]}
{"chat_id": 3, "parent_chat_id": -1, "timestamp": 3, "input_length": 16, "output_length": 1, "hash_ids": [7]}
{"chat_id": 4, "parent_chat_id": 2, "timestamp": 4, "input_length": 16, "output_length": 1, "hash_ids": [7]}
{"chat_id": 5, "parent_chat_id": 99, "timestamp": 5, "input_length": 16, "output_length": 1, "hash_ids": [7]}
{"chat_id": 6, "parent_chat_id": 3, "timestamp": 6, "input_length": 16, "output_length": 1, "hash_ids": [7]}
)";
  TraceInput input = TraceInput::from_text(text, "chains.jsonl");
  const Trace trace = read_trace(input);
  REQUIRE(trace.format == TraceFormat::kBailian);
  // Chat 5's parent is not in the trace: a session of its own.
  CHECK(sessions_of(trace) ==
        std::vector<SessionOf>{{1, 0}, {1, 0}, {2, 0}, {1, 0}, {3, 0}, {2, 0}});
  CHECK(trace.sessions == 3);
  const Trace mooncake = read_trace(sample_trace("mooncake/synthetic_trace.jsonl"));
  CHECK(mooncake.sessions == 0);
  CHECK(std::all_of(mooncake.requests.begin(), mooncake.requests.end(),
                    [](const TraceRequest& r) { return r.session == 0 && r.agent == 0; }));
}

TEST_CASE("sessions: native conv and agent") {
  const Trace trace = parse_native(R"({"id": 0, "t": 0, "segs": [[1, 4]], "conv": 70}
{"id": 1, "t": 1, "segs": [[2, 4]], "conv": 30}
{"id": 2, "t": 2, "segs": [[1, 4]], "conv": 70, "agent": 2}
{"id": 3, "t": 3, "segs": [[3, 4]]}
{"id": 4, "t": 4, "parent": 0, "segs": [[4, 4]], "conv": 70}
)",
                                   "native.jsonl");
  CHECK(sessions_of(trace) == std::vector<SessionOf>{{1, 0}, {2, 0}, {1, 2}, {0, 0}, {1, 0}});
  CHECK(trace.sessions == 2);
  const TraceError e = trace_error(
      [] { parse_native(R"({"id": 0, "t": 0, "segs": [[1, 4]], "agent": 1})", "native.jsonl"); });
  CHECK(e.reason() == "\"agent\" names a sub-agent of a session: it needs \"conv\"");
  const TraceError negative = trace_error([] {
    parse_native(R"({"id": 0, "t": 0, "segs": [[1, 4]], "conv": 1, "agent": -1})", "native.jsonl");
  });
  CHECK(negative.reason().find("\"agent\"") != std::string::npos);
}

TEST_CASE("native: retention ranges, and ranges that do not fit the prompt") {
  // Request 1's prompt is its parent's prompt (6) and answer (2), then 4 tokens: 12.
  const Trace trace = parse_native(
      R"({"id": 0, "t": 0, "segs": [[1, 6]], "out": 2, "retain": [[0, 4, 90, 30], [4, 6, 10]]}
{"id": 1, "t": 1, "parent": 0, "segs": [[2, 4]], "retain": [[8, 12, 100, 1.5]]}
{"id": 2, "t": 2, "segs": [[3, 4]]}
)",
      "native.jsonl");
  REQUIRE(trace.requests.size() == 3);
  const auto ranges = [&](std::size_t i) {
    std::vector<std::tuple<uint32_t, uint32_t, int32_t, double>> out;
    for (const TokenRangeRetention& r : trace.retention_of(i)) {
      out.emplace_back(r.token_start, r.token_end, r.priority, r.duration_s);
    }
    return out;
  };
  using R = std::tuple<uint32_t, uint32_t, int32_t, double>;
  CHECK(ranges(0) == std::vector<R>{{0, 4, 90, 30.0}, {4, 6, 10, kRetainForever}});
  CHECK(ranges(1) == std::vector<R>{{8, 12, 100, 1.5}});
  CHECK(ranges(2).empty());

  auto reason_of = [](const std::string& text) {
    return trace_error([&] { parse_native(text, "n.jsonl"); }).reason();
  };
  CHECK(reason_of(R"({"id": 1, "t": 0, "segs": [[1, 6]], "retain": [[0, 7, 50]]})") ==
        "\"retain\": retention range 0 [0, 7) ends at token 7, past the prompt's 6 tokens");
  CHECK(reason_of(R"({"id": 1, "t": 0, "segs": [[1, 6]], "retain": [[3, 3, 50]]})") ==
        "\"retain\": retention range 0 [3, 3) starts at token 3, not before its end");
  CHECK(reason_of(R"({"id": 1, "t": 0, "segs": [[1, 6]], "retain": [[0, 6, 50, 0]]})") ==
        "\"retain\": retention range 0 [0, 6) has a duration of 0 seconds; it must be positive "
        "(or forever)");
  CHECK(reason_of(R"({"id": 1, "t": 0, "segs": [[1, 6]], "retain": [[0, 6, 101]]})")
            .find("retain[0] priority") != std::string::npos);
  CHECK(reason_of(R"({"id": 1, "t": 0, "segs": [[1, 6]], "retain": [[0, 6, 50, -1]]})")
            .find("retain[0] seconds") != std::string::npos);
  CHECK(reason_of(R"({"id": 1, "t": 0, "segs": [[1, 6]], "retain": [[0, 6]]})") ==
        "retain[0] must be [start, end, priority] or [start, end, priority, seconds]");
}
