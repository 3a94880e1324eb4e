#include "tools/cli/activity.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "tools/cli/cli.h"

namespace radixkv::tools {

namespace {

// Written only by the command's thread, read by the new-handler on the same thread.
std::array<char, 512> g_activity{};
std::array<char, 64> g_command{};

template <std::size_t N>
void copy_into(std::array<char, N>& buffer, std::string_view text) {
  const std::size_t n = std::min(text.size(), N - 1);
  std::memcpy(buffer.data(), text.data(), n);
  buffer[n] = '\0';
}

void write_all(int fd, const char* text) {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(fd, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

Activity::Activity(std::string_view what) : previous_(g_activity.data()) {
  copy_into(g_activity, what);
}

Activity::~Activity() { copy_into(g_activity, previous_); }

void set_command_name(std::string_view command) { copy_into(g_command, command); }

std::string out_of_memory_message() {
  std::string message = "radixkv";
  if (g_command[0] != '\0') message += std::string(" ") + g_command.data();
  message += ": out of memory";
  if (g_activity[0] != '\0') message += std::string(" while ") + g_activity.data();
  return message;
}

void exit_out_of_memory() noexcept {
  // Nothing here may allocate: the text is assembled from the fixed buffers.
  write_all(STDERR_FILENO, "radixkv");
  if (g_command[0] != '\0') {
    write_all(STDERR_FILENO, " ");
    write_all(STDERR_FILENO, g_command.data());
  }
  write_all(STDERR_FILENO, ": out of memory");
  if (g_activity[0] != '\0') {
    write_all(STDERR_FILENO, " while ");
    write_all(STDERR_FILENO, g_activity.data());
  }
  write_all(STDERR_FILENO, "\n");
  ::_exit(kExitFailure);
}

}  // namespace radixkv::tools
