#include "cluster/local_node.hpp"

#include <algorithm>

namespace troupe {

local_node_config::local_node_config(local_node_options options) {
  set("scheduler.max-threads", static_cast<size_t>(std::max(1, options.scheduler_threads)));
  // CAF 0.17 prints a line when it starts/stops; keep stdout for the training log.
  set("logger.verbosity", caf::atom("quiet"));
  set("logger.console", caf::atom("none"));
}

} // namespace troupe
