// Checks of a job value that need no data and no model: they run before anything is opened,
// so a bad job fails before the first file is read or actor spawned.
#include <troupe/graph/job.hpp>

#include <stdexcept>
#include <string>

namespace troupe {

const char* to_string(topology_kind kind) {
  switch (kind) {
  case topology_kind::bsp:
    return "bsp";
  case topology_kind::async:
    return "async";
  case topology_kind::ssp:
    return "ssp";
  case topology_kind::hierarchical:
    return "hierarchical";
  case topology_kind::backup:
    return "backup";
  }
  return "?";
}

const char* to_string(aggregation_scope scope) {
  return scope == aggregation_scope::machine ? "machine" : "all";
}

const aggregation_level* find_level(const std::vector<aggregation_level>& levels,
                                    aggregation_scope scope) {
  for (const auto& l : levels)
    if (l.scope == scope)
      return &l;
  return nullptr;
}

int level_sources(const std::vector<aggregation_level>& levels, std::size_t i, int workers,
                  int machines) {
  if (levels[i].scope == aggregation_scope::machine)
    return workers / machines; // the smallest machine (machines hold W/M or W/M + 1)
  return i > 0 ? machines : workers;
}

const aggregation_level* topology_options::level(aggregation_scope scope) const {
  return find_level(levels, scope);
}

void use_preset(topology_options& t, topology_kind kind, int argument) {
  t.name = to_string(kind);
  t.levels.clear();
  t.staleness = -1;
  t.machines = 1;
  switch (kind) {
  case topology_kind::bsp:
    t.levels = {{aggregation_scope::all, 0}};
    break;
  case topology_kind::async:
    break;
  case topology_kind::ssp:
    t.staleness = argument < 0 ? 2 : argument;
    break;
  case topology_kind::hierarchical:
    t.machines = argument < 0 ? 2 : argument;
    t.levels = {{aggregation_scope::machine, 0}, {aggregation_scope::all, 0}};
    break;
  case topology_kind::backup: {
    const int backups = argument < 0 ? 1 : argument;
    if (backups >= t.workers) // need 0 would read as "all": refuse rather than run bsp
      throw std::invalid_argument("topology: backup(" + std::to_string(backups)
                                  + ") needs fewer backups than workers ("
                                  + std::to_string(t.workers) + ")");
    t.levels = {{aggregation_scope::all, t.workers - backups}};
    break;
  }
  }
}

void check_topology(const topology_options& t) {
  auto fail = [](const std::string& why) { throw std::invalid_argument("topology: " + why); };
  if (t.workers < 1)
    fail("workers must be at least 1, got " + std::to_string(t.workers));
  if (t.levels.size() > 2
      || (t.levels.size() == 2
          && (t.levels[0].scope != aggregation_scope::machine
              || t.levels[1].scope != aggregation_scope::all)))
    fail("gradients pass at most aggregate(machine), then aggregate(all), on their way to a shard");
  if (t.level(aggregation_scope::machine) && (t.machines < 1 || t.machines > t.workers))
    fail("aggregate(machine) needs 1 <= machines <= workers, got " + std::to_string(t.machines)
         + " machines for " + std::to_string(t.workers) + " workers");
  for (std::size_t i = 0; i < t.levels.size(); ++i) {
    const int sources = level_sources(t.levels, i, t.workers, t.machines), need = t.levels[i].need;
    if (need < 0 || need > sources)
      fail(std::string("aggregate(") + to_string(t.levels[i].scope)
           + ", need = " + std::to_string(need) + ") needs 0 <= need <= its "
           + std::to_string(sources) + " sources");
  }
  if (t.staleness < -1)
    fail("staleness must not be negative, got " + std::to_string(t.staleness));
  if (t.staleness >= 0 && !t.levels.empty() && t.levels.back().scope == aggregation_scope::all)
    fail("a staleness bound needs several sources at the shard, and aggregate(all) is its one");
  if (!t.compression.empty() && t.compression.size() != t.levels.size() + 1)
    fail(std::to_string(t.compression.size()) + " compression settings for the push path's "
         + std::to_string(t.levels.size() + 1) + " hops");
  for (std::size_t hop = 0; hop < t.compression.size(); ++hop) {
    const auto& c = t.compression[hop];
    if (c.pushes == value_encoding::two_bit && !(c.threshold > 0 && c.threshold < 1e30f))
      fail("a 2bit threshold must be a finite number above 0");
    if (c.answers == value_encoding::none)
      continue;
    if (!answers_sources_alike(t.levels, hop))
      fail("compressed answers (" + to_string(c)
           + ") are deltas against what every source of the hop holds, so the "
             "hop must answer all its sources the same weights at the same step (an aggregate "
             "without need); "
             "compress this hop's pushes only (push:"
           + to_string(c.pushes) + ")");
  }
}

compression_spec topology_options::hop_compression(std::size_t hop) const {
  return hop < compression.size() ? compression[hop] : compression_spec{};
}

bool answers_sources_alike(const std::vector<aggregation_level>& levels, std::size_t hop) {
  if (hop < levels.size())
    return levels[hop].need == 0;
  return !levels.empty() && levels.back().scope == aggregation_scope::all;
}

std::size_t machine_exit_hop(const std::vector<aggregation_level>& levels) {
  for (std::size_t i = 0; i < levels.size(); ++i)
    if (levels[i].scope == aggregation_scope::all)
      return i;
  return levels.size();
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
    throw std::invalid_argument(
      "job: a cluster needs at least one server and one worker process, got "
      + std::to_string(nodes.servers) + " server and " + std::to_string(nodes.workers)
      + " worker processes");
  if (nodes.continue_on_worker_loss && job.topology.synchronous())
    throw std::invalid_argument(
      "job: on_worker_loss = continue needs computes that push straight to "
      "the shards (async or ssp); topology "
      + job.topology.name
      + " waits at an aggregator for every worker, so it can only stop "
        "when one is lost");
  if (nodes.adopt_on_worker_loss && nodes.continue_on_worker_loss)
    throw std::invalid_argument("job: on_worker_loss is adopt or continue, not both");
  if (nodes.shard_backups < 0 || nodes.shard_backups > 1)
    throw std::invalid_argument("job: shard_backups must be 0 or 1, got "
                                + std::to_string(nodes.shard_backups));
  if (nodes.shard_backups == 1 && !nodes.single_process() && nodes.servers < 2)
    throw std::invalid_argument(
      "job: shard_backups = 1 keeps each server's shards on another server process too, "
      "and this run has "
      + std::to_string(nodes.servers) + ": give it at least 2");
  lr_schedule check(job.optimizer.schedule); // throws naming the bad field
}

} // namespace troupe
