// Running the radixkv command line from a test: in this process (run_cli, fast, what most tests
// want), or as the built binary in a child (for what only a process shows: its exit status after
// running out of memory, its peak resident set). The binary's path is RADIXKV_BINARY, which the
// test's CMake target defines.
#pragma once

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tools/cli/cli.h"

namespace radixkv::testing {

struct CliRun {
  int status = -1;
  std::string out, err;
  uint64_t peak_rss_bytes = 0;  // run_binary only
};

inline CliRun run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = tools::run_cli(args, out, err);
  return {status, out.str(), err.str(), 0};
}

#ifdef RADIXKV_BINARY
struct BinaryOptions {
  uint64_t memory_limit = 0;      // RLIMIT_AS of the child in bytes; 0: none
  std::string out = "/dev/null";  // where its standard output goes (read back unless /dev/null)
  std::string err;                // where its standard error goes (a temp file when empty)
};

// Runs the built binary with `args` in a child and waits for it; the status is its exit status, or
// 128 + the signal that ended it.
inline CliRun run_binary(const std::vector<std::string>& args, BinaryOptions options = {}) {
  const std::filesystem::path scratch =
      std::filesystem::temp_directory_path() / ("radixkv_child_" + std::to_string(::getpid()));
  if (options.err.empty()) {
    std::filesystem::create_directories(scratch);
    options.err = (scratch / "stderr").string();
  }
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (options.memory_limit > 0) {
      const rlimit limit{options.memory_limit, options.memory_limit};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    std::freopen(options.out.c_str(), "w", stdout);
    std::freopen(options.err.c_str(), "w", stderr);
    std::vector<char*> argv{const_cast<char*>(RADIXKV_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(RADIXKV_BINARY, argv.data());
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  REQUIRE(::wait4(pid, &status, 0, &usage) == pid);
  const auto slurp = [](const std::string& path) {
    if (path == "/dev/null") return std::string();
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  CliRun run{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(options.out),
             slurp(options.err),
             static_cast<uint64_t>(usage.ru_maxrss) * 1024};  // Linux counts kilobytes
  std::error_code ec;
  std::filesystem::remove_all(scratch, ec);
  return run;
}
#endif

}  // namespace radixkv::testing
