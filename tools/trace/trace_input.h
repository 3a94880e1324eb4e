// Where a trace's bytes come from: a file, standard input ("-", a pipe, process substitution), or
// text in memory. Read in chunks, so that a JSONL trace is never held whole: memory is one chunk
// plus the longest line.
//
// Every line handed out, and the whole text from read_all(), is followed by at least kPadding
// readable bytes (what simdjson needs to read a JSON value in place, SIMDJSON_PADDING). A UTF-8
// byte order mark at the very start is skipped. Line numbers count every line from 1, blank ones
// included, so that errors name the line an editor shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radixkv::tools {

class TraceInput {
 public:
  static constexpr std::size_t kPadding = 64;
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

  struct Line {
    std::string_view text;  // without the '\n' and a '\r' before it
    uint64_t number = 0;    // from 1
  };

  // `path` "-" is standard input. Throws TraceError when it cannot be opened or is a folder.
  static TraceInput open(const std::filesystem::path& path);
  static TraceInput from_text(std::string_view text, std::string name);

  TraceInput(TraceInput&& other) noexcept;
  TraceInput& operator=(TraceInput&&) = delete;
  ~TraceInput();

  // The path as given, or "standard input": what errors name.
  const std::string& name() const { return name_; }

  // The next line, or nullopt at the end of the input. Valid until the next call.
  std::optional<Line> next_line();
  // The first line from here on that is not blank, without consuming anything: next_line() still
  // returns every line from the current one. nullopt when only blank lines are left.
  std::optional<Line> peek_record_line();
  // Everything from the current line to the end, as one padded text (a whole JSON document).
  // Its first byte is at line line_number() + 1.
  std::string_view read_all();
  uint64_t line_number() const { return line_; }
  // Bytes consumed so far (lines handed out by next_line(), the byte order mark), and the
  // input's whole size when it is known (a regular file, text in memory; not a pipe). Readers
  // use the two to size what they build ahead (reserve_segments_ahead in trace.h).
  uint64_t bytes_consumed() const { return consumed_before_buffer_ + begin_; }
  std::optional<uint64_t> total_bytes() const { return total_bytes_; }

 private:
  TraceInput(std::string name, int fd, bool owns_fd, std::string_view memory);
  // Skips a byte order mark at the very start, once.
  void start();
  // Reads more bytes after end_, growing the buffer when it is full; false at end of input.
  bool fill();
  // Ensures [begin_, end_) starts at offset 0 of the buffer (forgets what was consumed).
  void compact();
  // End of the line starting at `from` (the '\n', or end_ at end of input); nullopt: need more.
  std::optional<std::size_t> find_line_end(std::size_t from);

  std::string name_;
  int fd_ = -1;
  bool owns_fd_ = false;
  std::string_view memory_;  // from_text: the bytes not yet copied into the buffer
  std::vector<char> buffer_;
  std::size_t begin_ = 0;  // first byte not consumed
  std::size_t end_ = 0;    // end of the bytes read
  bool eof_ = false;
  bool started_ = false;                 // the byte order mark check is done
  uint64_t line_ = 0;                    // lines consumed
  uint64_t consumed_before_buffer_ = 0;  // bytes compact() dropped from the buffer's front
  std::optional<uint64_t> total_bytes_;
};

}  // namespace radixkv::tools
