// The member's table of moves (member_phases.hpp). docs/architecture.md draws this table, and
// tests/cluster/member/member_phases_test.cpp fails when the two differ.
#include "cluster/member/member_phases.hpp"

namespace troupe {

const std::vector<phase_edge>& member_edges() {
  static const std::vector<phase_edge> edges{
    {"connecting", "joining", "a channel to the scheduler: it joins"},
    {"connecting", "ending", "no scheduler within the join timeout"},
    {"joining", "starting", "the scheduler's assignment"},
    {"joining", "rejoining", "the scheduler lost before an assignment"},
    {"joining", "ending", "refused, no assignment in time, or a failure"},
    {"starting", "running", "its part spawned: it says ready"},
    {"starting", "ending", "the assignment could not be taken, or a failure"},
    {"running", "rejoining", "the scheduler lost in training"},
    {"running", "ending", "the scheduler's goodbye, a lost peer, or a failure"},
    {"rejoining", "running", "a restarted scheduler reached: it rejoins"},
    {"rejoining", "rejoining", "the restarted scheduler lost before it took the rejoin"},
    {"rejoining", "connecting", "a restarted scheduler reached, no place yet: it joins anew"},
    {"rejoining", "ending", "no scheduler back within the scheduler timeout, or a failure"},
  };
  return edges;
}

} // namespace troupe
