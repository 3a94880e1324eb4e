// Reading trace records with simdjson's On-Demand API (the readers' shared helpers, not part of the
// library's interface).
//
// On-Demand parses as it is read, in document order, with no parse tree: a record's fields are
// visited once, and each value is converted where the reader asks for it. What that leaves
// unchecked is checked here, so that the readers stay strict JSON readers:
//   - a key twice in one object (at any depth of a record) is an error, not "the last one wins";
//   - values a reader does not use are still walked and checked (skip_value), so `tru` or a bad
//     number in an extra field is an error too;
//   - nothing may follow a record on its line.
// Every problem throws RecordError with the reason only; the reader adds the file and line.
#pragma once

#include <fmt/format.h>
#include <simdjson.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tools/trace/trace.h"
#include "tools/trace/trace_input.h"

namespace radixkv::tools::detail {

namespace od = simdjson::ondemand;

static_assert(TraceInput::kPadding >= simdjson::SIMDJSON_PADDING);

// A record's problem, without file and line.
class RecordError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A record that is not valid JSON: nothing after the problem can be read.
class JsonSyntaxError : public RecordError {
 public:
  JsonSyntaxError(const std::string& reason, simdjson::error_code code)
      : RecordError(reason), code_(code) {}
  simdjson::error_code code() const { return code_; }

 private:
  simdjson::error_code code_;
};

// JsonSyntaxError "invalid JSON: <what is wrong>" for an error simdjson reports.
[[noreturn]] void throw_json_error(simdjson::error_code error);

// The value of a simdjson result, or JsonSyntaxError.
template <typename T>
T checked(simdjson::simdjson_result<T>&& result) {
  T value;
  if (const simdjson::error_code error = std::move(result).get(value)) throw_json_error(error);
  return value;
}

std::string_view type_name(od::json_type type);

// The name of a field in errors: "\"in\"", or "hash_ids[7]" (name, index and suffix). Cheap to
// make for every value read; the text is only built when something is wrong.
struct Label {
  static constexpr std::size_t kNoIndex = ~std::size_t{0};
  Label(const char* text) : name(text) {}  // NOLINT: implicit, so a plain name reads as one
  Label(std::string_view text, std::size_t i, std::string_view after = {})
      : name(text), index(i), suffix(after) {}
  std::string str() const;

  std::string_view name;
  std::size_t index = kNoIndex;
  std::string_view suffix;
};

// Keys seen in one object: a few inline, the rest (rare) on the heap.
class KeySet {
 public:
  // False when `key` was already there.
  bool insert(std::string_view key);

 private:
  std::array<std::string_view, 16> inline_;
  std::size_t size_ = 0;
  std::vector<std::string_view> more_;
};

// Calls fn(key, value) for each member of `object` in document order; a key already seen in this
// object is a RecordError. `fn` must consume or skip_value() the value.
template <typename Fn>
void for_each_member(od::object object, Fn&& fn) {
  KeySet seen;  // unescaped keys live as long as the document
  for (auto field_result : object) {
    od::field field = checked(std::move(field_result));
    const std::string_view key = checked(field.unescaped_key());
    if (!seen.insert(key)) throw RecordError(fmt::format("the key \"{}\" appears twice", key));
    fn(key, field.value());
  }
}

// Walks a value nobody reads, checking that it is valid JSON with no key twice in an object.
void skip_value(od::value value);

// Throws the RecordError (or JsonSyntaxError) of a whole-number field that is not a whole number
// in [min, max]: simdjson's `error` reading it as uint64, or else the number read.
[[noreturn]] void throw_not_whole(od::value& value, const Label& what, simdjson::error_code error,
                                  uint64_t number, uint64_t min, uint64_t max);

// A whole number in [min, max]; `what` names it in errors. Inline, for the hash ids of a trace:
// a million of them in a large one.
inline uint64_t whole_number(od::value value, const Label& what, uint64_t min, uint64_t max) {
  uint64_t number = 0;
  const simdjson::error_code error = value.get_uint64().get(number);
  if (error == simdjson::SUCCESS && number >= min && number <= max) return number;
  throw_not_whole(value, what, error, number, min, max);
}
int64_t signed_whole_number(od::value value, const Label& what, int64_t min, int64_t max);
// A finite number of seconds (or milliseconds), not negative.
double time_value(od::value value, const Label& what);
std::string_view string_value(od::value value, const Label& what);
od::array array_value(od::value value, const Label& what);

inline void require_field(bool present, std::string_view key) {
  if (!present) throw RecordError(fmt::format("missing field \"{}\"", key));
}

// The document of one record (a JSONL line, or a whole file), which must be an object.
od::object record_object(od::document& document);
// Refuses anything after the record (`{...} {...}` on one line).
void require_end(od::document& document);

// Reserves Trace::segments for a whole input of which `bytes_read` of `bytes_total` bytes gave the
// segments held so far: their rate, extrapolated, plus an eighth. Without it the vector grows by
// doubling, and on a 10^6-segment trace copying and faulting in the old buffers took about a third
// of reading it (bench/README.md, issue 34). It is only an estimate: records unlike the first ones
// make the vector grow as before, and room reserved but never used is address space, not memory
// (never faulted in). Never more than bytes_total / 2 segments, what the densest text could hold.
// The extrapolated count (without the margin, at most 256 MiB of it) is faulted in at once, which
// on a VM costs a fraction of faulting it page by page as the segments are written.
void reserve_segments_ahead(Trace& trace, uint64_t bytes_read, uint64_t bytes_total);
// Bytes of a JSONL input read before its segments are reserved for the rest: enough records to
// tell their size, a small share of a large trace.
inline constexpr uint64_t kSegmentSampleBytes = uint64_t{1} << 18;

// For each line of `input` that is not blank: record = read(object, line_number), the line must
// end after the object, then add(std::move(record)), which builds `trace`. A line's problem
// (invalid JSON, or a std::invalid_argument such as RecordError from read or add) throws
// TraceError(file, line, reason), or under skip_bad is counted in trace.skipped_records; a record
// is added whole or not at all. Once kSegmentSampleBytes are read, trace.segments is reserved for
// the whole input when its size is known.
template <typename Read, typename Add>
void for_each_record(TraceInput& input, bool skip_bad, Trace& trace, Read&& read, Add&& add) {
  od::parser parser;
  bool reserved = !input.total_bytes();
  while (const std::optional<TraceInput::Line> line = input.next_line()) {
    if (!reserved && input.bytes_consumed() >= kSegmentSampleBytes) {
      reserve_segments_ahead(trace, input.bytes_consumed() - line->text.size(),
                             *input.total_bytes());
      reserved = true;
    }
    if (line->text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      od::document document = checked(parser.iterate(line->text.data(), line->text.size(),
                                                     line->text.size() + TraceInput::kPadding));
      auto record = read(record_object(document), line->number);
      require_end(document);
      add(std::move(record));
      continue;
    } catch (const std::invalid_argument& e) {
      if (!skip_bad) throw TraceError(input.name(), line->number, e.what());
    }
    ++trace.skipped_records;
  }
}

}  // namespace radixkv::tools::detail
