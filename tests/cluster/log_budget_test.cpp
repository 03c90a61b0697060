// log_budget: what a flood of refusals leaves in a log, on a clock the test sets.
#include <catch2/catch.hpp>

#include "cluster/log_budget.hpp"

using namespace troupe;
using namespace std::chrono_literals;

TEST_CASE("a log budget lets its lines through per window and counts the rest", "[cluster][log]") {
  log_budget budget(3, 10s);
  const auto start = log_budget::clock::time_point{} + 1h;
  int written = 0;
  for (int line = 0; line < 1000; ++line)
    written += budget.take("refused", start + std::chrono::milliseconds(line)).has_value();
  CHECK(written == 3);
  // The next window's first line says how many were left out.
  const auto next = budget.take("refused", start + 10s);
  REQUIRE(next);
  CHECK(*next == "refused (997 more like it not logged: at most 3 every 10 s)");
  const auto after = budget.take("refused", start + 10s + 1ms);
  REQUIRE(after);
  CHECK(*after == "refused");
}

TEST_CASE("a quiet log budget writes every line as it is", "[cluster][log]") {
  log_budget budget(1, 1s);
  const auto start = log_budget::clock::time_point{} + 1h;
  for (int line = 0; line < 5; ++line) {
    const auto taken = budget.take("line " + std::to_string(line), start + line * 2s);
    REQUIRE(taken);
    CHECK(*taken == "line " + std::to_string(line));
  }
}
