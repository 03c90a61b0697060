// The push side of a placement plan, spawned: its parameter shards and aggregators, in plan
// order, and each worker's routes to them. The training session uses it with real compute
// actors; troupe_bench_messaging with fixed-cost stand-ins, so the benchmark measures exactly
// the wiring that trains. What exists and who pushes where is decided by the plan
// (troupe/graph/placement.hpp); nothing here re-derives it.
//
//   bsp, backup:  compute w -> aggregator_k (source w) -> shard_k
//   hierarchical: compute w -> machine_aggregator_m_k -> aggregator_k -> shard_k
//   async, ssp:   compute w -> shard_k (source w)
#pragma once

#include <functional>
#include <vector>

#include <caf/actor_system.hpp>

#include <troupe/actors/aggregator_actor.hpp>
#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/actors/timeouts.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/graph/placement.hpp>

namespace troupe {

/// Called with each actor spawned, the plan's entry for it and, for an aggregator, the actor
/// it was given to push to (for monitoring, shutdown and wiring reports).
using spawn_observer = std::function<void(const caf::actor& spawned, const planned_actor& entry,
                                          const caf::actor& downstream)>;

/// Shards and aggregators by plan actor index (invalid handles for the other roles).
using push_targets = std::vector<push_target_actor>;

/// Spawns every shard and aggregator of `plan` in plan order. Each shard's keys are cut from
/// `initial` (parameter-shaped start values by slot; each shard copies its keys) and named by
/// the plan. Throws std::invalid_argument if `initial` does not match the plan's parameters.
push_targets spawn_push_side(caf::actor_system& system, const placement_plan& plan,
                             const std::vector<tensor>& initial,
                             const optimizer_options& optimizer,
                             const request_timeouts& timeouts, const spawn_observer& spawned);

/// Compute `worker`'s routes, one per shard in shard order (push_group::shard indexes them):
/// the actor it pushes that shard's keys to, the keys, and its source index there.
std::vector<shard_route> routes_of(const placement_plan& plan, const push_targets& targets,
                                   int worker);

/// Each shard's own route (the shard itself, its keys), for pulling the final weights.
std::vector<shard_route> shard_routes(const placement_plan& plan, const push_targets& targets);

} // namespace troupe
