// A server's or worker's phases (member_node.cpp moves between them): each a struct holding
// only what that phase needs, and the one table of moves between them (member_phases.cpp),
// which docs/architecture.md draws. What the node holds in every phase (its channels, its part
// once assigned) is member_state's. Private to cluster/.
#pragma once

#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/error.hpp>

#include "cluster/phase_machine.hpp"

namespace troupe::member_phases {

/// Reaching its scheduler, retrying until the join timeout (it may not listen yet).
struct connecting {
  bool retrying = false; ///< a try failed and the node said it retries (said once)
  static constexpr const char* name = "connecting";
};

/// Connected to the scheduler and joined; waiting for the assignment.
struct joining {
  static constexpr const char* name = "joining";
};

/// Spawning its part (a server: opening its listener for workers).
struct starting {
  static constexpr const char* name = "starting";
};

/// Said ready; serves and trains until the scheduler ends the run.
struct running {
  static constexpr const char* name = "running";
};

/// Lost its scheduler: trains on (when placed), retrying to reach a restarted one until the
/// scheduler timeout.
struct rejoining {
  static constexpr const char* name = "rejoining";
};

/// Ended: its part is shut down; it answers its host once the channels it told how it ends have
/// closed, or the goodbye grace is over.
struct ending {
  caf::error outcome;                   ///< why it ended; none: the run finished
  std::vector<caf::actor_addr> closing; ///< channels told how it ends, not closed yet
  static constexpr const char* name = "ending";
};

} // namespace troupe::member_phases

namespace troupe {

/// The moves a member makes, each with the event that makes it.
const std::vector<phase_edge>& member_edges();

using member_machine =
  phase_machine<member_phases::connecting, member_phases::joining, member_phases::starting,
                member_phases::running, member_phases::rejoining, member_phases::ending>;

} // namespace troupe
