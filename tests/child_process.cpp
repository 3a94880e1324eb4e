#include "tests/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace radixkv::testing {

ChildProcess::ChildProcess(std::vector<std::string> argv, ChildStdin in) {
  int fds[2], in_fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  if (in == ChildStdin::kPipe && ::pipe2(in_fds, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  if (in == ChildStdin::kPipe) posix_spawn_file_actions_adddup2(&actions, in_fds[0], STDIN_FILENO);
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const int error = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (in_fds[0] >= 0) ::close(in_fds[0]);
  if (error != 0) {
    ::close(fds[0]);
    if (in_fds[1] >= 0) ::close(in_fds[1]);
    throw std::runtime_error("cannot start " + argv[0] + ": " + strerror(error));
  }
  stdout_fd_ = fds[0];
  stdin_fd_ = in_fds[1];
}

bool ChildProcess::write_line(const std::string& line) {
  if (stdin_fd_ < 0) return false;
  // A child gone would make the write raise SIGPIPE: an error here instead.
  static const bool sigpipe_ignored = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)sigpipe_ignored;
  const std::string text = line + "\n";
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(stdin_fd_, text.data() + done, text.size() - done);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

ChildProcess::~ChildProcess() {
  if (!status_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  ::close(stdout_fd_);
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd item{stdout_fd_, POLLIN, 0};
    if (::poll(&item, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(stdout_fd_, chunk, sizeof(chunk));
    if (n <= 0) return std::nullopt;  // its stdout closed
    buffered_.append(chunk, static_cast<size_t>(n));
  }
}

std::optional<std::string> ChildProcess::read_line_starting(const std::string& prefix,
                                                            std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    std::optional<std::string> line = read_line(std::max(left, std::chrono::milliseconds(0)));
    if (!line || line->starts_with(prefix)) return line;
  }
}

void ChildProcess::signal(int signal_number) {
  if (!status_) ::kill(pid_, signal_number);
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!status_) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    } else if (std::chrono::steady_clock::now() > deadline) {
      return std::nullopt;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return status_;
}

std::optional<std::string> python_missing(const std::string& python) {
  if (::access(python.c_str(), X_OK) != 0) return python + " is not there";
  ChildProcess probe({python, "-c", "import zmq, msgpack; print('ok')"});
  const std::optional<std::string> line = probe.read_line(std::chrono::seconds(30));
  if (probe.wait(std::chrono::seconds(30)) != 0 || line != "ok") {
    return python + " lacks python3-zmq or python3-msgpack";
  }
  return std::nullopt;
}

std::string scratch_path(const std::string& name) {
  struct Scratch {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("radixkv_test_" + std::to_string(::getpid()));
    Scratch() { std::filesystem::create_directories(path); }
    ~Scratch() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Scratch scratch;
  return (scratch.path / name).string();
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace radixkv::testing
