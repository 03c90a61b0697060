// The scheduler's phases (cluster/scheduler/scheduler_phases.hpp): its table of moves has the
// shape of a run (every phase reached, every phase can end, the end is final), the machine
// refuses a move the table lacks, and docs/architecture.md draws exactly the table.
#include "cluster/scheduler/scheduler_phases.hpp"

#include <caf/sec.hpp>
#include <catch2/catch.hpp>

#include "tests/cluster/phase_drawing.hpp"

using namespace troupe;
using namespace troupe::testing;

TEST_CASE("every scheduler move joins two of its phases, and every phase is reached and can end",
          "[scheduler_phases]") {
  check_table_shape<scheduler_machine>(scheduler_edges(), 6);
}

TEST_CASE("a scheduler moves only along its table, and keeps a phase's state in that phase",
          "[scheduler_phases]") {
  scheduler_machine m{scheduler_edges()};
  CHECK(m.is<scheduler_phases::joining>());
  CHECK_THROWS_WITH(m.enter(scheduler_phases::workers_assigned{}),
                    Catch::Contains("from phase joining to workers assigned"));
  m.enter(scheduler_phases::servers_assigned{});
  CHECK_THROWS_WITH(m.enter(scheduler_phases::failing{}),
                    Catch::Contains("from phase servers assigned to failing"));
  m.enter(scheduler_phases::workers_assigned{});
  m.enter(scheduler_phases::training{});
  m.enter(scheduler_phases::failing{caf::make_error(caf::sec::request_timeout)});
  REQUIRE(m.as<scheduler_phases::failing>() != nullptr);
  CHECK(m.as<scheduler_phases::failing>()->unexplained);
  CHECK(m.as<scheduler_phases::ending>() == nullptr);
  m.enter(scheduler_phases::ending{caf::make_error(caf::sec::request_timeout), false});
  CHECK_THROWS_WITH(m.enter(scheduler_phases::training{}),
                    Catch::Contains("from phase ending to training"));
}

TEST_CASE("docs/architecture.md draws the scheduler's table of moves", "[scheduler_phases]") {
  const auto drawn = drawn_edges(TROUPE_SOURCE_DIR "/docs/architecture.md", "scheduler");
  REQUIRE(drawn.size() == scheduler_edges().size());
  CHECK(drawn == table_edges(scheduler_edges()));
}
