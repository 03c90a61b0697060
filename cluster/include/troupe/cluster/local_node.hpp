// The in-process node: the CAF actor system configuration for running every actor of a job
// in one process (the embedded default). The multi-node layer builds on the same settings: its
// peer channels are sockets with threads of their own (cluster/frame_socket.hpp), not CAF's
// network module.
//
// Thread budget: CAF's scheduler gets `scheduler_threads` workers (2 by default: one runs the
// compute actor's step, the other the loaders, shards and metrics meanwhile). Kernels have
// their own budget (kernels/threading.hpp). Logging to the console is off; actors report
// through the metrics actor.
#pragma once

#include <caf/actor_system_config.hpp>

namespace troupe {

struct local_node_options {
  int scheduler_threads = 2;
  /// Work-sharing scheduler (idle workers sleep) instead of CAF's work stealing (idle
  /// workers poll); see local_node.cpp.
  bool work_sharing = true;
};

class local_node_config : public caf::actor_system_config {
public:
  explicit local_node_config(local_node_options options = {});
};

} // namespace troupe
