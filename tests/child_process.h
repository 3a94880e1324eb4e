// ChildProcess: a program the integration tests start, read and stop, bounded in time. Its stdout
// is a pipe the test reads line by line (with a deadline); stderr goes where the test's goes (the
// ctest log). The destructor kills (SIGKILL) and reaps a child still running, so that no test
// leaves a process behind, whatever it fails on.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tests/skip.h"

namespace radixkv::testing {

enum class ChildStdin { kInherited, kPipe };

class ChildProcess {
 public:
  // Throws std::runtime_error naming the program when it cannot be started. With kPipe, the
  // child's stdin is a pipe write_line() writes to (closed with the ChildProcess).
  explicit ChildProcess(std::vector<std::string> argv, ChildStdin in = ChildStdin::kInherited);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The next line of its stdout (without the newline); nullopt at the deadline or at its end.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // The next line that starts with `prefix`, skipping others; nullopt as read_line().
  std::optional<std::string> read_line_starting(const std::string& prefix,
                                                std::chrono::milliseconds timeout);
  // Writes `line` and a newline to its stdin (kPipe); false when the child no longer reads it.
  bool write_line(const std::string& line);
  void signal(int signal_number);
  // Its exit status (128 + signal when a signal ended it), or nullopt at the deadline.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stdin_fd_ = -1;
  std::string buffered_;
  std::optional<int> status_;
};

// Why the Debian Python with python3-zmq and python3-msgpack cannot run here, or nullopt when it
// can. `python` is its path.
std::optional<std::string> python_missing(const std::string& python);

// A path in a scratch folder of this test process, removed when the process ends.
std::string scratch_path(const std::string& name);

// True when the environment says this is CI (CI=true): tests that cannot start there fail.
bool in_ci();

}  // namespace radixkv::testing

// A test that cannot start what it needs: fails under CI, skips (saying why) elsewhere. Use it in
// the test case's own body, as RADIXKV_SKIP.
#define RADIXKV_SKIP_OUTSIDE_CI(reason)                                            \
  do {                                                                             \
    if (::radixkv::testing::in_ci()) FAIL("cannot run under CI=true: " << reason); \
    RADIXKV_SKIP(reason);                                                          \
  } while (false)
