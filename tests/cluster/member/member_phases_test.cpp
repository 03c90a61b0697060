// The member's phases (cluster/member/member_phases.hpp): its table of moves has the shape of a
// run (every phase reached, every phase can end, the end is final), the machine refuses a move
// the table lacks, and docs/architecture.md draws exactly the table.
#include "cluster/member/member_phases.hpp"

#include <caf/sec.hpp>
#include <catch2/catch.hpp>

#include "tests/cluster/phase_drawing.hpp"

using namespace troupe;
using namespace troupe::testing;

TEST_CASE("every member move joins two of its phases, and every phase is reached and can end",
          "[member_phases]") {
  check_table_shape<member_machine>(member_edges(), 6);
}

TEST_CASE("a member moves only along its table, and keeps a phase's state in that phase",
          "[member_phases]") {
  member_machine m{member_edges()};
  CHECK(m.is<member_phases::connecting>());
  CHECK(m.as<member_phases::ending>() == nullptr);
  m.as<member_phases::connecting>()->retrying = true;
  CHECK_THROWS_WITH(m.enter(member_phases::running{}),
                    Catch::Contains("from phase connecting to running"));
  CHECK(m.as<member_phases::connecting>()->retrying); // a refused move changes nothing
  m.enter(member_phases::joining{});
  m.enter(member_phases::starting{});
  m.enter(member_phases::running{});
  m.enter(member_phases::rejoining{});
  m.enter(member_phases::running{});
  auto& end = m.enter(member_phases::ending{caf::make_error(caf::sec::request_timeout), {}});
  CHECK(end.outcome);
  CHECK(std::string(m.name()) == "ending");
  CHECK_THROWS_WITH(m.enter(member_phases::running{}),
                    Catch::Contains("from phase ending to running"));
}

TEST_CASE("docs/architecture.md draws the member's table of moves", "[member_phases]") {
  const auto drawn = drawn_edges(TROUPE_SOURCE_DIR "/docs/architecture.md", "member");
  REQUIRE(drawn.size() == member_edges().size());
  CHECK(drawn == table_edges(member_edges()));
}
