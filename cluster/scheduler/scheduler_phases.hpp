// The scheduler's phases (scheduler_node.cpp and scheduler_admission.cpp move between them):
// each a struct holding only what that phase needs, and the one table of moves between them
// (scheduler_phases.cpp), which docs/architecture.md draws. What the scheduler holds in every
// phase (its members, the plan, the session) is scheduler_state's. Private to cluster/.
#pragma once

#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <troupe/actors/training_session.hpp>

#include "cluster/phase_machine.hpp"

namespace troupe::scheduler_phases {

/// Waiting for every server and worker to join (a restarted scheduler: to rejoin).
struct joining {
  static constexpr const char* name = "joining";
};

/// The servers have their parts; waiting for them to be ready.
struct servers_assigned {
  static constexpr const char* name = "servers assigned";
};

/// The workers have theirs (with the servers' endpoints); waiting for them to be ready.
struct workers_assigned {
  static constexpr const char* name = "workers assigned";
};

/// The session trains.
struct training {
  static constexpr const char* name = "training";
};

/// The session failed with an echo of a lost channel; waiting (at most a connection timeout) for
/// the loss itself, which names the node and when.
struct failing {
  caf::error unexplained; ///< the session's failure, ended with once the loss is named
  static constexpr const char* name = "failing";
};

/// The members were told how the run ends; waiting for their channels to close.
struct ending {
  caf::expected<training_result> outcome;
  bool servers_told =
    false; ///< the servers know how the run ends (a finished run: after the workers)
  static constexpr const char* name = "ending";
};

} // namespace troupe::scheduler_phases

namespace troupe {

/// The moves the scheduler makes, each with the event that makes it.
const std::vector<phase_edge>& scheduler_edges();

using scheduler_machine =
  phase_machine<scheduler_phases::joining, scheduler_phases::servers_assigned,
                scheduler_phases::workers_assigned, scheduler_phases::training,
                scheduler_phases::failing, scheduler_phases::ending>;

} // namespace troupe
