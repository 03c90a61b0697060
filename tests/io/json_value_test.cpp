// Tests for io/json_value.cpp: the strict reader behind the safetensors header.
#include <troupe/io/json_value.hpp>

#include <catch2/catch.hpp>

using namespace troupe;
using Catch::Contains;

TEST_CASE("parse_json reads every kind of value", "[io][json]") {
  const auto v =
    parse_json(R"( {"a": [1, -2.5e3, true, false, null], "s": "x\"\\\n\u00e9\ud83d\ude00"} )");
  REQUIRE(v.type == json_value::kind::object);
  const auto* a = v.find("a");
  REQUIRE(a != nullptr);
  REQUIRE(a->items.size() == 5);
  CHECK(a->items[1].text == "-2.5e3");
  CHECK(a->items[2].boolean);
  CHECK(a->items[4].type == json_value::kind::null);
  CHECK(v.find("s")->text == "x\"\\\n\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.find("missing") == nullptr);
  CHECK(json_unsigned(parse_json("9223372036854775807"), "n") == 9223372036854775807ull);
}

TEST_CASE("parse_json refuses what RFC 8259 does not allow, with the byte offset", "[io][json]") {
  CHECK_THROWS_WITH(parse_json("{\"a\":1,\"a\":2}"), Contains("duplicate key \"a\""));
  CHECK_THROWS_WITH(parse_json("[1,]"), Contains("at byte 3"));
  CHECK_THROWS_WITH(parse_json("01"), Contains("malformed number"));
  CHECK_THROWS_WITH(parse_json("\"\\ud800\""), Contains("unpaired high surrogate"));
  CHECK_THROWS_WITH(parse_json("\"a\nb\""), Contains("control character"));
  CHECK_THROWS_WITH(parse_json("{} x"), Contains("after the JSON value"));
  CHECK_THROWS_WITH(parse_json(std::string(100, '[') + std::string(100, ']')),
                    Contains("deeper than 64"));
  CHECK_THROWS_WITH(json_unsigned(parse_json("1.5"), "the extent"), Contains("the extent is not"));
  CHECK_THROWS_WITH(json_unsigned(parse_json("9223372036854775808"), "n"), Contains("larger than"));
}
