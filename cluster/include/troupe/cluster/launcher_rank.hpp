// The one rule that turns a launcher's rank (MPI, PMI, Slurm: one number per process of the
// job) into a node's place: rank 0 is the scheduler, ranks 1..S the S servers, ranks
// S+1..S+W the W workers. `troupe node` uses it twice, to tell its role and its rank within
// that role; both come from here so that they cannot drift apart.
//
// Thread-safety: pure functions.
#pragma once

#include <troupe/cluster/wire_messages.hpp>

namespace troupe {

struct launcher_place {
  node_kind role = node_kind::scheduler;
  int rank = 0; ///< within its role: server 0 is launcher rank 1
};

/// The place of launcher rank `rank` among 1 scheduler, `servers` servers and `workers`
/// workers. Throws std::out_of_range when rank is negative or beyond 1 + servers + workers - 1,
/// std::invalid_argument when servers or workers is below 1.
launcher_place place_of_launcher_rank(int rank, int servers, int workers);

} // namespace troupe
