// The roles of the actors a run spawns: one vocabulary for the placement plan, the config
// language's route endpoints (loader, compute, aggregate(machine), aggregate(all), shard) and
// everything that prints them.
//
// Thread-safety: plain values.
#pragma once

namespace troupe {

enum class plan_role {
  loader,             ///< training batches of one worker's data part
  validation_loader,  ///< validation batches, shared by every compute of its node
  compute,            ///< one model replica
  machine_aggregator, ///< sums one machine's workers for one shard (`aggregate(machine)`)
  aggregator,         ///< sums every worker (or machine) for one shard (`aggregate(all)`)
  shard,              ///< owns some keys and applies the optimizer to them
  coordinator,        ///< drives the epochs
  metrics,            ///< reports
};
/// "loader", "validation_loader", "compute", "machine_aggregator", "aggregator", ...
const char* to_string(plan_role role);

} // namespace troupe
