#include "tools/trace/trace_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "tools/trace/trace.h"

namespace radixkv::tools {

namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

TraceInput::TraceInput(std::string name, int fd, bool owns_fd, std::string_view memory)
    : name_(std::move(name)), fd_(fd), owns_fd_(owns_fd), memory_(memory) {
  struct stat info {};
  if (fd_ < 0) {
    total_bytes_ = memory_.size();
  } else if (::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode)) {
    total_bytes_ = static_cast<uint64_t>(info.st_size);
  }
}

TraceInput::TraceInput(TraceInput&& other) noexcept
    : name_(std::move(other.name_)),
      fd_(std::exchange(other.fd_, -1)),
      owns_fd_(std::exchange(other.owns_fd_, false)),
      memory_(other.memory_),
      buffer_(std::move(other.buffer_)),
      begin_(other.begin_),
      end_(other.end_),
      eof_(other.eof_),
      started_(other.started_),
      line_(other.line_),
      consumed_before_buffer_(other.consumed_before_buffer_),
      total_bytes_(other.total_bytes_) {}

TraceInput::~TraceInput() {
  if (owns_fd_) ::close(fd_);
}

TraceInput TraceInput::open(const std::filesystem::path& path) {
  if (path == "-") return TraceInput("standard input", STDIN_FILENO, false, {});
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw TraceError(path.string(), 0, "is a folder, not a file");
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    throw TraceError(path.string(), 0,
                     error == ENOENT
                         ? std::string("no such file or folder")
                         : "cannot be opened for reading: " + std::string(strerror(error)));
  }
  return TraceInput(path.string(), fd, true, {});
}

TraceInput TraceInput::from_text(std::string_view text, std::string name) {
  return TraceInput(std::move(name), -1, false, text);
}

void TraceInput::compact() {
  if (begin_ == 0) return;
  std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
  consumed_before_buffer_ += begin_;
  end_ -= begin_;
  begin_ = 0;
}

void TraceInput::start() {
  if (started_) return;
  while (end_ - begin_ < kByteOrderMark.size() && fill()) {
  }
  if (std::string_view(buffer_.data() + begin_, end_ - begin_).starts_with(kByteOrderMark)) {
    begin_ += kByteOrderMark.size();
  }
  started_ = true;
}

bool TraceInput::fill() {
  if (eof_) return false;
  compact();
  if (buffer_.size() < end_ + kPadding + 1) {
    // Text in memory needs no more room than it has left; a file or a pipe gets a chunk.
    const std::size_t chunk = fd_ < 0 ? std::max<std::size_t>(memory_.size(), 1) : kChunkBytes;
    buffer_.resize(std::max(buffer_.size() * 2, end_ + chunk + kPadding));
  }
  const std::size_t room = buffer_.size() - kPadding - end_;
  std::size_t got = 0;
  if (fd_ < 0) {
    got = std::min(room, memory_.size());
    std::memcpy(buffer_.data() + end_, memory_.data(), got);
    memory_.remove_prefix(got);
  } else {
    ssize_t n = 0;
    do {
      n = ::read(fd_, buffer_.data() + end_, room);
    } while (n < 0 && errno == EINTR);
    if (n < 0) throw TraceError(name_, line_, "could not be read: " + std::string(strerror(errno)));
    got = static_cast<std::size_t>(n);
  }
  end_ += got;
  eof_ = got == 0;
  return got > 0;
}

std::optional<std::size_t> TraceInput::find_line_end(std::size_t from) {
  std::size_t scanned = from;  // relative to begin_, which fill() may move
  while (true) {
    const char* start = buffer_.data() + begin_;
    if (const void* nl = std::memchr(start + scanned, '\n', end_ - begin_ - scanned)) {
      return static_cast<std::size_t>(static_cast<const char*>(nl) - start);
    }
    scanned = end_ - begin_;
    if (!fill()) return eof_ && scanned > from ? std::optional(scanned) : std::nullopt;
  }
}

std::optional<TraceInput::Line> TraceInput::peek_record_line() {
  std::size_t from = 0;
  uint64_t number = line_;
  start();
  while (true) {
    const std::optional<std::size_t> end = find_line_end(from);
    if (!end) return std::nullopt;
    std::string_view text(buffer_.data() + begin_ + from, *end - from);
    ++number;
    if (text.ends_with('\r')) text.remove_suffix(1);
    if (text.find_first_not_of(" \t\r") != std::string_view::npos) return Line{text, number};
    from = *end + 1;
    if (from > end_ - begin_) return std::nullopt;
  }
}

std::optional<TraceInput::Line> TraceInput::next_line() {
  start();
  const std::optional<std::size_t> end = find_line_end(0);
  if (!end) return std::nullopt;
  std::string_view text(buffer_.data() + begin_, *end);
  begin_ = std::min(begin_ + *end + 1, end_);
  if (text.ends_with('\r')) text.remove_suffix(1);
  return Line{text, ++line_};
}

std::string_view TraceInput::read_all() {
  start();
  compact();
  struct stat info {};
  if (fd_ >= 0 && ::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
    // A file of known size is read into one buffer of that size, not grown by doubling.
    const auto size = static_cast<std::size_t>(info.st_size);
    if (buffer_.size() < size + kPadding + 1) buffer_.resize(size + kPadding + 1);
  }
  while (fill()) {
  }
  const std::string_view text(buffer_.data() + begin_, end_ - begin_);
  begin_ = end_;
  return text;
}

}  // namespace radixkv::tools
