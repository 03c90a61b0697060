// Checks of a job value that need no data and no model: they run before anything is opened,
// so a bad job fails before the first file is read or actor spawned.
#include <troupe/graph/job.hpp>

#include <stdexcept>
#include <string>

namespace troupe {

const char* to_string(topology_kind kind) {
  switch (kind) {
    case topology_kind::bsp: return "bsp";
    case topology_kind::async: return "async";
    case topology_kind::ssp: return "ssp";
    case topology_kind::hierarchical: return "hierarchical";
    case topology_kind::backup: return "backup";
  }
  return "?";
}

bool synchronous(topology_kind kind) {
  return kind == topology_kind::bsp || kind == topology_kind::backup
         || kind == topology_kind::hierarchical;
}

void check_topology(const topology_options& t) {
  if (t.workers < 1)
    throw std::invalid_argument("topology: workers must be at least 1, got "
                                + std::to_string(t.workers));
  if (t.mode == topology_kind::backup && (t.backup_workers < 0 || t.backup_workers >= t.workers))
    throw std::invalid_argument("topology: backup(" + std::to_string(t.backup_workers)
                                + ") needs 0 <= backups < workers (" + std::to_string(t.workers)
                                + ")");
  if (t.mode == topology_kind::ssp && t.staleness < 0)
    throw std::invalid_argument("topology: ssp staleness must not be negative");
  if (t.mode == topology_kind::hierarchical && (t.machines < 1 || t.machines > t.workers))
    throw std::invalid_argument("topology: hierarchical needs 1 <= machines <= workers, got "
                                + std::to_string(t.machines) + " machines for "
                                + std::to_string(t.workers) + " workers");
  if (t.straggler >= t.workers)
    throw std::invalid_argument("topology: straggler " + std::to_string(t.straggler)
                                + " is not one of the " + std::to_string(t.workers) + " workers");
}

void check_job(const training_job& job) {
  check_topology(job.topology);
  if (job.epochs < 0)
    throw std::invalid_argument("job: epochs must not be negative, got "
                                + std::to_string(job.epochs));
  if (job.validate_every < 1)
    throw std::invalid_argument("validate_every must be at least 1, got "
                                + std::to_string(job.validate_every));
  if (job.shards < 1)
    throw std::invalid_argument("job: shards must be at least 1, got "
                                + std::to_string(job.shards));
  if (job.top_k < 0)
    throw std::invalid_argument("job: top_k must not be negative (0: off), got "
                                + std::to_string(job.top_k));
  if (job.prefetch_depth < 0)
    throw std::invalid_argument("job: prefetch depth must not be negative, got "
                                + std::to_string(job.prefetch_depth));
  const auto& nodes = job.nodes;
  if (nodes.servers < 0 || nodes.workers < 0 || (nodes.servers == 0) != (nodes.workers == 0))
    throw std::invalid_argument("job: a cluster needs at least one server and one worker process, got "
                                + std::to_string(nodes.servers) + " server and "
                                + std::to_string(nodes.workers) + " worker processes");
  if (nodes.continue_on_worker_loss && job.topology.mode != topology_kind::async
      && job.topology.mode != topology_kind::ssp)
    throw std::invalid_argument(std::string("job: on_worker_loss = continue needs the async or ssp topology (")
                                + to_string(job.topology.mode)
                                + " waits for every worker, so it can only stop when one is lost)");
  lr_schedule check(job.optimizer.schedule);  // throws naming the bad field
}

} // namespace troupe
