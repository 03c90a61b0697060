// The flag parser: both spellings, switches, and a one-line usage error for every misuse.
#include <sstream>

#include <catch2/catch.hpp>

#include "apps/flags.hpp"

using namespace troupe;

TEST_CASE("flags parse --name value and --name=value, switches and help") {
  std::string s = "a";
  std::int64_t n = 1;
  double x = 0.5;
  bool sw = false;
  flag_set f("demo", "demo command");
  f.add("name", s, "a string");
  f.add("count", n, "an integer");
  f.add("rate", x, "a number");
  f.add_switch("fast", sw, "a switch");
  REQUIRE(f.parse({"--name", "b", "--count=7", "--rate", "1e-3", "--fast"}));
  CHECK(s == "b");
  CHECK(n == 7);
  CHECK(x == Approx(1e-3));
  CHECK(sw);
  CHECK(f.given("count"));
  flag_set g("demo", "demo command");
  g.add("name", s, "a string");
  CHECK_FALSE(g.parse({"--help"}));
  CHECK_THAT(g.help(), Catch::Contains("--name TEXT") && Catch::Contains("a string"));
}

TEST_CASE("a flag given twice takes its last value, as argparse does") {
  std::int64_t n = 1;
  flag_set f("demo", "demo");
  f.add("count", n, "an integer");
  CHECK(f.parse({"--count", "1", "--count=2"}));
  CHECK(n == 2);
}

TEST_CASE("an empty value stays empty in both spellings, and negative numbers are values") {
  std::string steps = "5,8";
  std::int64_t n = 0, m = 0;
  flag_set f("demo", "demo");
  f.add("steps", steps, "epochs");
  f.add("count", n, "an integer");
  f.add("other", m, "an integer");
  REQUIRE(f.parse({"--steps=", "--count", "-1", "--other=-2"}));
  CHECK(steps.empty());
  CHECK(n == -1);
  CHECK(m == -2);
  steps = "5";
  flag_set g("demo", "demo");
  g.add("steps", steps, "epochs");
  REQUIRE(g.parse({"--steps", ""}));
  CHECK(steps.empty());
}

TEST_CASE("hidden flags work but stay out of help and suggestions") {
  std::string knob;
  std::int64_t n = 0;
  flag_set f("demo", "demo");
  f.add("knob", knob, "a test knob");
  f.add("count", n, "an integer");
  f.hide("knob");
  REQUIRE(f.parse({"--knob", "0:5"}));
  CHECK(knob == "0:5");
  CHECK(f.given("knob"));
  CHECK_THAT(f.help(), !Catch::Contains("knob"));
  flag_set g("demo", "demo");
  g.add("knob", knob, "a test knob");
  g.hide("knob");
  CHECK_THROWS_WITH(g.parse({"--knb", "1"}), !Catch::Contains("did you mean"));
}

TEST_CASE("help fits 100 columns and names each value's type") {
  std::int64_t n = 1;
  std::string path;
  flag_set f("demo", std::string(150, 'x') + " " + std::string(30, 'y'));
  f.add("count", n, std::string(40, 'a') + " " + std::string(40, 'b') + " " + std::string(40, 'c'));
  f.add("out", path, "where");
  f.set_placeholder("out", "FILE");
  std::istringstream help(f.help());
  for (std::string line; std::getline(help, line);)
    if (line.find(' ') != std::string::npos) // one unbreakable word may not fit
      CHECK(line.size() <= 100);
  CHECK_THAT(f.help(), Catch::Contains("  --count N\n") && Catch::Contains("  --out FILE\n"));
}

TEST_CASE("flags reject what they cannot accept, naming the flag") {
  std::int64_t n = 1;
  double x = 0;
  bool sw = false;
  auto make = [&] {
    flag_set f("demo", "demo");
    f.add("count", n, "an integer");
    f.add("rate", x, "a number");
    f.add_switch("fast", sw, "a switch");
    return f;
  };
  CHECK_THROWS_WITH(make().parse({"--bogus"}), Catch::Contains("unknown flag --bogus"));
  CHECK_THROWS_WITH(make().parse({"--count"}), Catch::Contains("--count needs a value"));
  CHECK_THROWS_WITH(make().parse({"--count", "12x"}), Catch::Contains("'12x' is not an integer"));
  CHECK_THROWS_WITH(make().parse({"--rate", "nan"}), Catch::Contains("not a finite number"));
  CHECK_THROWS_WITH(make().parse({"--fast=1"}), Catch::Contains("takes no value"));
  CHECK_THROWS_WITH(make().parse({"stray"}), Catch::Contains("unexpected argument 'stray'"));
  CHECK_THROWS_WITH(make().parse({"--cuont", "1"}), Catch::Contains("did you mean --count?"));
  CHECK_THROWS_WITH(make().parse({"--zzzzzz", "1"}), !Catch::Contains("did you mean"));
  CHECK_THROWS_AS(make().parse({"--count", "99999999999999999999"}), usage_error);
}

TEST_CASE("an on|off flag takes on or off and names itself otherwise") {
  CHECK(on_off("local-sockets", "on"));
  CHECK_FALSE(on_off("local-sockets", "off"));
  CHECK_THROWS_WITH(on_off("local-sockets", "maybe"),
                    "--local-sockets: 'maybe' is not one of on, off");
  CHECK_THROWS_WITH(on_off("local-sockets", ""), "--local-sockets: '' is not one of on, off");
  CHECK_THROWS_WITH(on_off("local-sockets", "ON"), "--local-sockets: 'ON' is not one of on, off");
}
