// The resolved actor graph of a job: every actor instance and every message route, with what
// each route carries per training step. `troupe check` prints it, `troupe graph` draws it as
// Graphviz DOT. Sizes come from building the model (so an impossible network/input pair is a
// config error here) and from assign_keys, the same split the session uses.
//
// Validation loaders are left out: the graph shows the per-step training dataflow.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "graph/config/job_config.hpp"

namespace troupe {

struct plan_route {
  std::size_t from = 0, to = 0;  ///< indices into job_plan::actors
  std::string carries;           ///< "batch", "gradients", "summed gradients", "weights"
  std::int64_t keys = 0;         ///< parameter tensors per step (0 for batches)
  std::int64_t bytes = 0;        ///< bytes per step
};

struct job_plan {
  std::vector<std::string> actors;  ///< loader_0.., compute_0.., aggregator.., shard_0..
  std::vector<plan_route> routes;
  std::int64_t parameters = 0;      ///< trainable scalars
  std::vector<std::int64_t> shard_keys, shard_bytes;
};

/// Throws config_error (at the model statement) if the model cannot be built.
job_plan build_plan(const job_config& config);
/// Every resolved value, one `section.key = value  # default|line N` per line.
void print_config(std::ostream& out, const job_config& config);
void print_plan(std::ostream& out, const job_plan& plan);
std::string plan_to_dot(const job_plan& plan, const std::string& title);

} // namespace troupe
