#include "tools/trace/json_fields.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <new>
#include <type_traits>

namespace radixkv::tools::detail {

namespace {

// What a syntax error means, in words a trace's author can act on.
std::string_view syntax_problem(simdjson::error_code error) {
  switch (error) {
    case simdjson::TAPE_ERROR:
      return "a comma, colon, brace, bracket or key is missing or misplaced";
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
      return "the text ends inside an object or array";
    case simdjson::UTF8_ERROR:
      return "the text is not valid UTF-8";
    case simdjson::UNCLOSED_STRING:
      return "a string is not closed";
    case simdjson::UNESCAPED_CHARS:
      return "a string holds a control character that must be escaped";
    case simdjson::STRING_ERROR:
      return "a string is malformed";
    case simdjson::NUMBER_ERROR:
      return "a number is malformed";
    case simdjson::T_ATOM_ERROR:
    case simdjson::F_ATOM_ERROR:
    case simdjson::N_ATOM_ERROR:
      return "a value is not true, false, null, a number, a string, an array or an object";
    case simdjson::EMPTY:
      return "there is no JSON value";
    case simdjson::DEPTH_ERROR:
      return "arrays and objects are nested too deeply";
    case simdjson::TRAILING_CONTENT:
      return "something follows the value";
    default:
      return simdjson::error_message(error);
  }
}

// The number's text as written, for errors ("1e30", "10.5").
std::string number_text(od::value& value) {
  std::string_view raw = value.raw_json_token();
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t')) {
    raw.remove_suffix(1);
  }
  return std::string(raw);
}

od::json_type checked_type(od::value& value) { return checked(value.type()); }

// A number written without fraction or exponent: the only kind a whole-number field takes.
bool is_integer_literal(std::string_view text) {
  return text.find_first_of(".eE") == std::string_view::npos;
}

}  // namespace

void throw_json_error(simdjson::error_code error) {
  throw JsonSyntaxError(fmt::format("invalid JSON: {}", syntax_problem(error)), error);
}

std::string_view type_name(od::json_type type) {
  switch (type) {
    case od::json_type::array:
      return "an array";
    case od::json_type::object:
      return "an object";
    case od::json_type::number:
      return "a number";
    case od::json_type::string:
      return "a string";
    case od::json_type::boolean:
      return "a boolean";
    case od::json_type::null:
      return "null";
  }
  return "?";
}

void skip_value(od::value value) {
  switch (checked_type(value)) {
    case od::json_type::array:
      for (auto item : checked(value.get_array())) skip_value(checked(std::move(item)));
      return;
    case od::json_type::object:
      for_each_member(checked(value.get_object()),
                      [](std::string_view, od::value member) { skip_value(member); });
      return;
    case od::json_type::number:
      checked(value.get_number());
      return;
    case od::json_type::string:
      checked(value.get_string());
      return;
    case od::json_type::boolean:
      checked(value.get_bool());
      return;
    case od::json_type::null:
      if (!checked(value.is_null())) throw_json_error(simdjson::N_ATOM_ERROR);
      return;
  }
}

namespace {

// Why `value` is no whole number in `range`, once reading it as one failed with `error`.
[[noreturn]] void explain_not_whole(od::value& value, const Label& what, simdjson::error_code error,
                                    const std::string& range) {
  const od::json_type type = checked_type(value);
  if (type != od::json_type::number) {
    throw RecordError(
        fmt::format("{} must be a whole number, got {}", what.str(), type_name(type)));
  }
  const std::string text = number_text(value);
  if (!is_integer_literal(text)) {
    checked(value.get_double());  // a malformed number is invalid JSON, not a fraction
    throw RecordError(fmt::format("{} must be a whole number, got {}", what.str(), text));
  }
  // Valid digits that do not fit 64 bits (or a negative one for an unsigned field) are a number
  // out of range; anything else is malformed.
  if (error != simdjson::NUMBER_OUT_OF_RANGE && error != simdjson::INCORRECT_TYPE) {
    throw_json_error(error);
  }
  throw RecordError(fmt::format("{} is {}, outside {}", what.str(), text, range));
}

}  // namespace

std::string Label::str() const {
  return index == kNoIndex ? fmt::format("{}{}", name, suffix)
                           : fmt::format("{}[{}]{}", name, index, suffix);
}

bool KeySet::insert(std::string_view key) {
  for (std::size_t i = 0; i < size_; ++i) {
    if (inline_[i] == key) return false;
  }
  if (std::find(more_.begin(), more_.end(), key) != more_.end()) return false;
  if (size_ < inline_.size()) {
    inline_[size_++] = key;
  } else {
    more_.push_back(key);
  }
  return true;
}

namespace {

// A whole number of type T (int64_t or uint64_t, read as simdjson reads that type) in [min, max].
template <typename T>
T whole(od::value& value, const Label& what, T min, T max) {
  T number = 0;
  simdjson::error_code error;
  if constexpr (std::is_signed_v<T>) {
    error = value.get_int64().get(number);
  } else {
    error = value.get_uint64().get(number);
  }
  if (error) explain_not_whole(value, what, error, fmt::format("[{}, {}]", min, max));
  if (number < min || number > max) {
    throw RecordError(fmt::format("{} is {}, outside [{}, {}]", what.str(), number, min, max));
  }
  return number;
}

}  // namespace

int64_t signed_whole_number(od::value value, const Label& what, int64_t min, int64_t max) {
  return whole<int64_t>(value, what, min, max);
}

void throw_not_whole(od::value& value, const Label& what, simdjson::error_code error,
                     uint64_t number, uint64_t min, uint64_t max) {
  if (error) explain_not_whole(value, what, error, fmt::format("[{}, {}]", min, max));
  throw RecordError(fmt::format("{} is {}, outside [{}, {}]", what.str(), number, min, max));
}

double time_value(od::value value, const Label& what) {
  double number = 0;
  if (value.get_double().get(number) != simdjson::SUCCESS) {
    const od::json_type type = checked_type(value);
    if (type != od::json_type::number) {
      throw RecordError(fmt::format("{} must be a number, got {}", what.str(), type_name(type)));
    }
    checked(value.get_double());  // malformed, or too large for a double
  }
  if (!std::isfinite(number)) {
    throw RecordError(fmt::format("{} is {}, too large", what.str(), number_text(value)));
  }
  if (number < 0) {
    throw RecordError(fmt::format("{} is {}, which is negative", what.str(), number_text(value)));
  }
  return number;
}

std::string_view string_value(od::value value, const Label& what) {
  const od::json_type type = checked_type(value);
  if (type != od::json_type::string) {
    throw RecordError(fmt::format("{} must be a string, got {}", what.str(), type_name(type)));
  }
  return checked(value.get_string());
}

od::array array_value(od::value value, const Label& what) {
  const od::json_type type = checked_type(value);
  if (type != od::json_type::array) {
    throw RecordError(fmt::format("{} must be an array, got {}", what.str(), type_name(type)));
  }
  return checked(value.get_array());
}

od::object record_object(od::document& document) {
  const od::json_type type = checked(document.type());
  if (type != od::json_type::object) {
    throw RecordError(fmt::format("expected a JSON object, got {}", type_name(type)));
  }
  return checked(document.get_object());
}

void require_end(od::document& document) {
  const char* rest = nullptr;
  if (document.current_location().get(rest) == simdjson::SUCCESS) {
    throw JsonSyntaxError("invalid JSON: something follows the record", simdjson::TRAILING_CONTENT);
  }
}

namespace {

// Faults in the whole pages of [begin, begin + bytes) at once (MADV_POPULATE_WRITE): one call
// instead of a fault per 4 KiB page, each of which costs microseconds on a VM. Best effort: a
// kernel without it (before Linux 5.14) leaves the pages to fault in one by one, as before.
void populate(void* begin, uint64_t bytes) {
#ifdef MADV_POPULATE_WRITE
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(begin) + bytes) / page * page;
  if (end > first) ::madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE);
#else
  (void)begin;
  (void)bytes;
#endif
}

}  // namespace

void reserve_segments_ahead(Trace& trace, uint64_t bytes_read, uint64_t bytes_total) {
  if (bytes_read == 0 || bytes_read >= bytes_total) return;
  const double rate = static_cast<double>(trace.segments.size()) / static_cast<double>(bytes_read);
  const double expected = rate * static_cast<double>(bytes_total);
  const auto most = static_cast<double>(bytes_total / 2);
  const auto segments = static_cast<uint64_t>(std::min(expected * 1.125, most));
  if (segments <= trace.segments.size()) return;
  try {
    trace.segments.reserve(segments);
  } catch (const std::bad_alloc&) {
    return;  // a guess the machine cannot give: the segments grow as they are read instead
  }
  // The expected part is faulted in now, the margin only when used; at most kPopulateBytes, so
  // that a file whose first records are far denser than the rest commits little it won't use.
  constexpr uint64_t kPopulateBytes = uint64_t{256} << 20;
  const auto used = static_cast<uint64_t>(std::min(expected, most));
  if (used > trace.segments.size()) {
    populate(trace.segments.data() + trace.segments.size(),
             std::min((used - trace.segments.size()) * sizeof(Segment), kPopulateBytes));
  }
}

}  // namespace radixkv::tools::detail
