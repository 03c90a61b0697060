// balance_plan: the rank counts that make a bsp step shortest, and the one move toward them.
#include <catch2/catch.hpp>

#include "cluster/scheduler/balance_plan.hpp"

using namespace troupe;

namespace {

balanced_process process(std::vector<int> ranks, double seconds) {
  return balanced_process{std::move(ranks), seconds};
}

} // namespace

TEST_CASE("balanced counts give a faster process more ranks, each at least one",
          "[cluster][balance]") {
  // 100 ms and 200 ms per rank, 6 ranks: 4 + 2 ends every step at 400 ms (3 + 3: 600 ms).
  const std::vector<balanced_process> two{process({0, 1, 2}, 0.1), process({3, 4, 5}, 0.2)};
  const auto counts = balanced_counts(two);
  REQUIRE(counts.size() == 2);
  CHECK(counts[0] == 4);
  CHECK(counts[1] == 2);
  CHECK(step_seconds(two, counts) == Approx(0.4));
  CHECK(step_seconds(two, {3, 3}) == Approx(0.6));
  // Equal speeds: equal counts; the first listed takes the odd one.
  const auto even = balanced_counts({process({0, 1}, 0.1), process({2, 3, 4}, 0.1)});
  REQUIRE(even.size() == 2);
  CHECK(even[0] == 3);
  CHECK(even[1] == 2);
  // A very slow process still keeps one.
  const auto slow = balanced_counts({process({0, 1}, 0.01), process({2, 3}, 10)});
  REQUIRE(slow.size() == 2);
  CHECK(slow[0] == 3);
  CHECK(slow[1] == 1);
}

TEST_CASE("balanced counts need every process's time", "[cluster][balance]") {
  CHECK(balanced_counts({}).empty());
  CHECK(balanced_counts({process({0, 1}, 0.1), process({2, 3}, 0)}).empty());
  CHECK(balanced_counts({process({0}, 0.1), process({}, 0.1)}).empty()); // fewer ranks than them
  CHECK(balanced_counts({process({0}, 0.1), process({1}, 0.1)}).size() == 2);
}

TEST_CASE("the next balance move takes the surplus of one process to the one short of most",
          "[cluster][balance]") {
  const auto move = next_balance_move({process({0, 1, 2}, 0.1), process({3, 4, 5}, 0.2)}, 0.05);
  REQUIRE(move);
  CHECK(move->from == 1);
  CHECK(move->to == 0);
  CHECK(move->count == 1);
  CHECK(move->step_before == Approx(0.6));
  CHECK(move->step_after == Approx(0.4));
  // Balanced already, or a gain below the threshold: no move.
  CHECK_FALSE(next_balance_move({process({0, 1, 2, 3}, 0.1), process({4, 5}, 0.2)}, 0.05));
  CHECK_FALSE(next_balance_move({process({0, 1}, 0.1), process({2, 3}, 0.104)}, 0.05));
  CHECK_FALSE(next_balance_move({process({0, 1}, 0.1), process({2, 3}, 0)}, 0.05));
  // Three processes: the one with the largest surplus gives to the one short of most.
  const auto three =
    next_balance_move({process({0}, 0.1), process({1, 2, 3, 4}, 0.1), process({5}, 0.1)}, 0.05);
  REQUIRE(three);
  CHECK(three->from == 1);
  CHECK(three->to == 0);
  CHECK(three->count == 1);
  CHECK(three->step_before == Approx(0.4));
  CHECK(three->step_after == Approx(0.3));
}
