// The scheduler's table of moves (scheduler_phases.hpp). docs/architecture.md draws this table,
// and tests/cluster/scheduler/scheduler_phases_test.cpp fails when the two differ.
#include "cluster/scheduler/scheduler_phases.hpp"

namespace troupe {

const std::vector<phase_edge>& scheduler_edges() {
  static const std::vector<phase_edge> edges{
    {"joining", "servers assigned", "every server joined"},
    {"joining", "training", "a restarted scheduler: every plan node rejoined"},
    {"joining", "ending", "the join timeout, a refusal that ends the run, or an interrupt"},
    {"servers assigned", "workers assigned", "every server ready"},
    {"servers assigned", "ending", "a member lost or failed, the join timeout, or an interrupt"},
    {"workers assigned", "training", "every worker ready: the session starts"},
    {"workers assigned", "ending", "a member lost or failed, the join timeout, or an interrupt"},
    {"training", "failing", "the session failed with a lost channel's echo, no loss named yet"},
    {"training", "ending", "the session's result, a loss that stops the run, or an interrupt"},
    {"failing", "ending", "the loss named, or a connection timeout without it"},
  };
  return edges;
}

} // namespace troupe
