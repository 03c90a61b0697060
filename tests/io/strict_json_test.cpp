// Tests for io/strict_json.cpp: nlohmann-json's parser with the checks a file header needs.
#include "io/strict_json.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using Catch::Contains;

TEST_CASE("parse_strict_json reads every kind of value, members in file order", "[io][json]") {
  const auto v = parse_strict_json(
    R"( {"s": "x\"\\\n\u00e9\ud83d\ude00", "a": [1, -2.5e3, true, false, null]} )");
  REQUIRE(v.is_object());
  CHECK(v.begin().key() == "s"); // not sorted: a safetensors header's tensors keep their order
  CHECK(v["s"].get<std::string>() == "x\"\\\n\xc3\xa9\xf0\x9f\x98\x80");
  const auto& a = v["a"];
  REQUIRE(a.size() == 5);
  CHECK(a[1].get<double>() == -2500.0);
  CHECK(a[4].is_null());
  CHECK(json_unsigned(parse_strict_json("9223372036854775807"), "n") == 9223372036854775807ull);
}

TEST_CASE("parse_strict_json refuses what RFC 8259 does not allow, with the byte offset",
          "[io][json]") {
  CHECK_THROWS_WITH(parse_strict_json("{\"a\":1,\"a\":2}"), Contains("duplicate key \"a\""));
  CHECK_NOTHROW(parse_strict_json("{\"o\":{\"a\":1},\"p\":{\"a\":2}}")); // per object
  CHECK_THROWS_WITH(parse_strict_json("[1,]"), Contains("at byte 3"));
  CHECK_THROWS(parse_strict_json("01"));
  CHECK_THROWS(parse_strict_json("\"\\ud800\"")); // an unpaired surrogate
  CHECK_THROWS_WITH(parse_strict_json("\"a\nb\""), Contains("control character"));
  CHECK_THROWS_WITH(parse_strict_json("{} x"), Contains("at byte 3"));
  CHECK_THROWS_WITH(parse_strict_json(std::string(100, '[') + std::string(100, ']')),
                    Contains("deeper than 64"));
  CHECK_NOTHROW(parse_strict_json(std::string(60, '[') + std::string(60, ']')));
}

TEST_CASE("json_unsigned takes non-negative integers up to 2^63 - 1 only", "[io][json]") {
  CHECK(json_unsigned(parse_strict_json("0"), "n") == 0);
  CHECK_THROWS_WITH(json_unsigned(parse_strict_json("1.5"), "the extent"),
                    Contains("the extent is not"));
  CHECK_THROWS_WITH(json_unsigned(parse_strict_json("1e3"), "n"), Contains("not a non-negative"));
  CHECK_THROWS_WITH(json_unsigned(parse_strict_json("-1"), "n"), Contains("not a non-negative"));
  CHECK_THROWS_WITH(json_unsigned(parse_strict_json("\"7\""), "n"), Contains("not a non-negative"));
  CHECK_THROWS_WITH(json_unsigned(parse_strict_json("9223372036854775808"), "n"),
                    Contains("larger than"));
  CHECK_THROWS(json_unsigned(parse_strict_json("18446744073709551616"), "n")); // past 2^64
}
