// A generated trace of about 1 GB replays with a peak resident set below the size of its file:
// the readers stream (JSONL a line at a time) and the trace model is smaller than the text.
// Labelled slow: generating and replaying 8.9 million requests takes minutes.
//
// Both commands run as children of this test (fork + exec of the built binary), and the peak is
// the replay child's own ru_maxrss from wait4(), so neither the generator's memory nor the test's
// is counted.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "tests/cli_runs.h"

namespace fs = std::filesystem;

using radixkv::testing::run_binary;

TEST_CASE("memory: a 1 GB generated trace replays in less memory than its file") {
  const fs::path dir = fs::temp_directory_path() / ("radixkv_memory_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path trace = dir / "big.jsonl";
  // 1.35 million conversations: 8.9 million requests, 1.09 GB of native JSONL.
  REQUIRE(run_binary({"gen", "--conversations", "1350000", "--seed", "7", "--out", trace.string()})
              .status == 0);
  const uint64_t file_bytes = fs::file_size(trace);
  CHECK(file_bytes > 1'000'000'000);
  radixkv::testing::BinaryOptions options;
  options.out = (dir / "report.json").string();
  const auto replay =
      run_binary({"replay", "--trace", trace.string(), "--json", "--no-progress"}, options);
  fs::remove(trace);
  CHECK(replay.status == 0);
  MESSAGE("trace file " << file_bytes << " bytes, replay peak RSS " << replay.peak_rss_bytes
                        << " bytes (" << 100.0 * replay.peak_rss_bytes / file_bytes << " %)");
  CHECK(replay.peak_rss_bytes < file_bytes);
  fs::remove_all(dir);
}
