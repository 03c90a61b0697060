// Tests for apps/integer_text.cpp: the one integer reader of the command line and environment.
#include "apps/integer_text.hpp"

#include <catch2/catch.hpp>

#include "apps/flags.hpp"

using namespace troupe;
using Catch::Contains;

TEST_CASE("parse_integer reads an optional minus and decimal digits") {
  CHECK(parse_integer("0") == 0);
  CHECK(parse_integer("007") == 7);
  CHECK(parse_integer("-42") == -42);
  CHECK(parse_integer("9223372036854775807") == INT64_MAX);
  CHECK(parse_integer("-9223372036854775808") == INT64_MIN);
}

TEST_CASE("parse_integer refuses exponents, fractions, signs, blanks, junk and overflow") {
  for (const char* text :
       {"", "-", "+5", " 5", "5 ", "12x", "0x10", "1.0", "1e30", "1e+09", "1E3", "--1",
        "9223372036854775808", "-9223372036854775809", "99999999999999999999", "1,2"})
    CHECK_FALSE(parse_integer(text).has_value());
}

TEST_CASE("flag_integer names the flag and the range") {
  CHECK(flag_integer("threads", "8", 1, 64) == 8);
  CHECK_THROWS_WITH(flag_integer("threads", "1e+09"), "--threads: '1e+09' is not an integer");
  CHECK_THROWS_WITH(flag_integer("threads", "99", 1, 64),
                    Contains("--threads: 99 is out of range (1 to 64)"));
  CHECK_THROWS_AS(flag_integer("n", "-1", 0, 5), usage_error);
}
