// The strict JSON reader under the trace readers.
#include <doctest/doctest.h>

#include "tools/trace/json_reader.h"

using radixkv::tools::JsonError;
using radixkv::tools::parse_json;

TEST_CASE("json: values, nesting and exact integers") {
  const auto v =
      parse_json(R"( {"a": [1, -2, 3.5, 1e3, true, false, null], "s": "x\"\u00e9\ud83d\ude00",
                               "big": 9007199254740993, "o": {}} )");
  REQUIRE(v.is_object());
  const auto& a = v.find("a")->items();
  REQUIRE(a.size() == 7);
  CHECK(a[0].is_integer());
  CHECK(a[0].as_int() == 1);
  CHECK(a[1].as_int() == -2);
  CHECK(!a[2].is_integer());
  CHECK(a[2].as_double() == 3.5);
  CHECK(!a[3].is_integer());  // an exponent makes it a double, even when whole
  CHECK(a[3].as_double() == 1000.0);
  CHECK(a[4].as_bool());
  CHECK(a[6].is_null());
  CHECK(v.find("s")->as_string() == "x\"\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.find("big")->as_int() == 9007199254740993);  // 2^53 + 1: not rounded through a double
  CHECK(v.find("o")->members().empty());
  CHECK(v.find("missing") == nullptr);
}

TEST_CASE("json: strictness, with the offset of the problem") {
  struct Case {
    const char* text;
    std::size_t offset;
  };
  const Case cases[] = {
      {"[1,]", 3},     {"{\"a\":1,}", 7}, {"01", 0},          {"[1 2]", 3},
      {"\"a\tb\"", 2}, {"nul", 0},        {"{a:1}", 1},       {"[1] x", 4},
      {"\"\\x\"", 2},  {"-", 1},          {"1.", 2},          {"1e", 2},
      {"[", 1},        {"\"abc", 4},      {"\"\\udc00\"", 7}, {"NaN", 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    try {
      parse_json(c.text);
      FAIL("accepted invalid JSON");
    } catch (const JsonError& e) {
      CHECK(e.offset() == c.offset);
    }
  }
}

TEST_CASE("json: nesting depth is bounded") {
  std::string deep(300, '[');
  deep += std::string(300, ']');
  CHECK_THROWS_AS(parse_json(deep), JsonError);
  std::string ok(100, '[');
  ok += std::string(100, ']');
  CHECK_NOTHROW(parse_json(ok));
}

TEST_CASE("json: position_of gives 1-based line and column") {
  const std::string text = "ab\ncd\nef";
  CHECK(radixkv::tools::position_of(text, 0).line == 1);
  CHECK(radixkv::tools::position_of(text, 4).line == 2);
  CHECK(radixkv::tools::position_of(text, 4).column == 2);
  CHECK(radixkv::tools::position_of(text, 7).line == 3);
}
