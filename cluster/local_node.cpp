#include <troupe/cluster/local_node.hpp>

#include <algorithm>

#include <troupe/actors/actor_errors.hpp>

namespace troupe {

local_node_config::local_node_config(local_node_options options) {
  set("scheduler.max-threads", static_cast<size_t>(std::max(1, options.scheduler_threads)));
  // A shared queue whose idle workers sleep on a condition variable. The default
  // work-stealing scheduler polls for work between short sleeps, and on a 2-core machine that
  // polling steals time from oneDNN's OpenMP threads during every compute step.
  set("scheduler.policy", options.work_sharing ? caf::atom("sharing") : caf::atom("stealing"));
  // CAF 0.17 prints a line when it starts/stops; keep stdout for the training log.
  set("logger.verbosity", caf::atom("quiet"));
  set("logger.console", caf::atom("none"));
  troupe::add_error_category(*this);
}

} // namespace troupe
