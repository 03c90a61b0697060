// The resolved actor graph of a job: every actor instance and every message route, with what
// each route carries per training step. `troupe check` prints it, `troupe graph` draws it as
// Graphviz DOT. Sizes come from building the model (so an impossible network/input pair is a
// config error here) and from plan_keys with the config's slicing and grouping, the same key
// plan the session builds, so the keys, pushes and bytes shown are the ones that travel.
//
// Validation loaders are left out: the graph shows the per-step training dataflow.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <troupe/graph/config/job_config.hpp>

namespace troupe {

struct plan_route {
  std::size_t from = 0, to = 0;  ///< indices into job_plan::actors
  std::string carries;           ///< "batch", "gradients", "summed gradients", "weights"
  std::int64_t keys = 0;         ///< keys (whole parameters or slices) per step; 0 for batches
  std::int64_t bytes = 0;        ///< bytes per step
  std::int64_t messages = 0;     ///< pushes (or their weight replies) per step; 0 for batches
};

/// A parameter above slice_bytes, cut into slices spread over the shards.
struct sliced_parameter {
  std::string name;        ///< e.g. "fc6.weight"
  std::int64_t bytes = 0;  ///< the whole parameter
  std::int64_t slices = 0;
};

struct job_plan {
  std::vector<std::string> actors;  ///< loader_0.., compute_0.., aggregator.., shard_0..
  std::vector<plan_route> routes;
  std::int64_t parameters = 0;      ///< trainable scalars
  key_plan_options key_options;     ///< the config's slice_bytes and group_bytes
  bool overlap = true;              ///< pushes leave during backward
  std::vector<sliced_parameter> sliced;  ///< in slot order
  /// Per shard (shards the plan leaves empty are dropped): keys owned, bytes owned, and the
  /// pushes it receives from each worker per step.
  std::vector<std::int64_t> shard_keys, shard_bytes, shard_pushes;
  std::int64_t keys_per_step = 0;    ///< keys each worker pushes per step (all shards)
  std::int64_t pushes_per_step = 0;  ///< pushes (push groups) each worker sends per step
};

/// Throws config_error (at the model statement) if the model cannot be built.
job_plan build_plan(const job_config& config);
/// Every resolved value, one `section.key = value  # default|line N` per line.
void print_config(std::ostream& out, const job_config& config);
void print_plan(std::ostream& out, const job_plan& plan);
std::string plan_to_dot(const job_plan& plan, const std::string& title);

} // namespace troupe
