// A generated trace of about 1 GB replays with a peak resident set below the size of its file:
// the readers stream (JSONL a line at a time) and the trace model is smaller than the text.
// Labelled slow: generating and replaying 8.9 million requests takes minutes.
//
// Both commands run as children of this test (fork + exec of the built binary), and the peak is
// the replay child's own ru_maxrss from wait4(), so neither the generator's memory nor the test's
// is counted.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Child {
  int status = -1;
  uint64_t peak_rss_bytes = 0;
};

// Runs the radixkv binary with `args`, its standard output to `out` (or /dev/null).
Child run(const std::vector<std::string>& args, const std::string& out = "/dev/null") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::freopen(out.c_str(), "w", stdout);
    std::vector<char*> argv{const_cast<char*>(RADIXKV_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(RADIXKV_BINARY, argv.data());
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  REQUIRE(::wait4(pid, &status, 0, &usage) == pid);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          static_cast<uint64_t>(usage.ru_maxrss) * 1024};  // Linux reports kilobytes
}

}  // namespace

TEST_CASE("memory: a 1 GB generated trace replays in less memory than its file") {
  const fs::path dir = fs::temp_directory_path() / ("radixkv_memory_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path trace = dir / "big.jsonl";
  // 1.35 million conversations: 8.9 million requests, 1.09 GB of native JSONL.
  REQUIRE(
      run({"gen", "--conversations", "1350000", "--seed", "7", "--out", trace.string()}).status ==
      0);
  const uint64_t file_bytes = fs::file_size(trace);
  CHECK(file_bytes > 1'000'000'000);
  const Child replay = run({"replay", "--trace", trace.string(), "--json", "--no-progress"},
                           (dir / "report.json").string());
  fs::remove(trace);
  CHECK(replay.status == 0);
  MESSAGE("trace file " << file_bytes << " bytes, replay peak RSS " << replay.peak_rss_bytes
                        << " bytes (" << 100.0 * replay.peak_rss_bytes / file_bytes << " %)");
  CHECK(replay.peak_rss_bytes < file_bytes);
  fs::remove_all(dir);
}
