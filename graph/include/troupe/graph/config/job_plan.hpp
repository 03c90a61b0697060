// A config and its placement plan as text: `troupe check` prints every resolved value of a
// config (print_config) and then its plan (print_plan); `troupe graph` draws the plan as
// Graphviz DOT (plan_to_dot). The plan itself is troupe/graph/placement.hpp's, the one the
// session spawns; plan_config only turns its failures into config errors that point at the
// statement they concern.
//
// Thread-safety: pure functions.
#pragma once

#include <ostream>
#include <string>

#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/placement.hpp>

namespace troupe {

/// plan_placement(job, data) for the job a config describes (apps' to_training_job). Throws
/// config_error: at the model statement if the network cannot take the data, at
/// cluster.workers if a worker's data part holds no batch, at the topology otherwise.
placement_plan plan_config(const job_config& config, const training_job& job,
                           const data_facts& data);
/// Every resolved value, one `section.key = value  # default|line N` per line.
void print_config(std::ostream& out, const job_config& config);
/// The plan: hash, steps, keys, slices, pushes, shards, aggregators, then every route.
void print_plan(std::ostream& out, const placement_plan& plan);
/// What a route carries per step, as print_plan and plan_to_dot label it: "gradients (source
/// 0): 4 keys in 2 pushes, 1.2 MiB/step".
std::string route_label(const placement_plan& plan, const planned_route& route);

/// The actors and routes as a Graphviz digraph; control and report routes dashed.
std::string plan_to_dot(const placement_plan& plan, const std::string& title);

} // namespace troupe
