// libFuzzer harness over the trace readers: the fuzzer's bytes are a trace file, read as each
// format and as a guess, with and without --skip-bad. A malformed trace must end in TraceError or
// UsageError (never a crash, a hang, an unbounded allocation or another exception); a trace that
// reads must keep the model's invariants (tools/trace/trace.h), expand, and replay in cache mode
// with every page accounted for. The first byte picks the block size of hash-id formats.
//
// Build and run: scripts/fuzz.sh (corpus in tests/fuzz_corpus_traces).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "tools/replay/cache_replay.h"
#include "tools/trace/trace_reader.h"
#include "tools/trace/units.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_traces: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_model(const Trace& trace) {
  std::size_t segments = 0;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const TraceRequest& r = trace.requests[i];
    uint64_t input = 0;
    if (r.parent != kNoParent) {
      if (r.parent >= i) fail("a parent after its child", std::to_string(i));
      input =
          uint64_t{trace.requests[r.parent].input_tokens} + trace.requests[r.parent].output_tokens;
    }
    for (const Segment& s : trace.segments_of(r)) input += s.length;
    if (input != r.input_tokens || input == 0 || input > kMaxInputTokens) {
      fail("input tokens do not add up", std::to_string(i));
    }
    if (r.request_class >= trace.class_names.size())
      fail("a class without a name", std::to_string(i));
    segments += r.num_segments;
  }
  if (segments != trace.segments.size()) fail("segments", "not all owned by one request");
  // Expansion, bounded so that a long prompt costs no more than a short one.
  TokenExpander expander(trace);
  for (std::size_t i = 0; i < trace.requests.size() && i < 64; ++i) {
    const std::size_t want = std::min<std::size_t>(trace.requests[i].input_tokens, 4096);
    if (expander.expand(i, 4096).size() != want) fail("expansion length", std::to_string(i));
  }
  if (trace.requests.empty() || trace.requests.size() > 32) return;
  CacheReplayConfig config;
  config.layout = KvLayout{1, 1, 4, 2, 4};
  config.capacity_pages = 16;
  config.high_watermark = 0.75;
  config.low_watermark = 0.5;
  const ReplayResult result = replay_cache(trace, config);
  if (!result.ok()) fail("replay accounting", result.accounting_error);
}

void read_as(std::string_view text, std::optional<TraceFormat> format, uint32_t block_tokens,
             bool skip_bad) {
  try {
    TraceInput input = TraceInput::from_text(text, "fuzz");
    const bool hash_ids = format == TraceFormat::kMooncake || format == TraceFormat::kBailian;
    check_model(read_trace(
        input, {format, skip_bad, hash_ids ? std::optional(block_tokens) : std::nullopt}));
  } catch (const TraceError&) {
  } catch (const UsageError&) {
  } catch (const std::exception& e) {
    fail("unexpected exception", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  constexpr uint32_t kBlockTokens[] = {1, 4, 16, 512};
  const uint32_t block_tokens = kBlockTokens[data[0] % 4];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  for (const bool skip_bad : {false, true}) {
    read_as(text, std::nullopt, block_tokens, skip_bad);
    for (TraceFormat format : {TraceFormat::kNative, TraceFormat::kMooncake, TraceFormat::kBailian,
                               TraceFormat::kAgentic}) {
      read_as(text, format, block_tokens, skip_bad);
    }
  }
  return 0;
}
