// The push side of a placement plan, spawned: its parameter shards and aggregators, in plan
// order, and each worker's routes to them. The training session uses it with real compute
// actors; troupe_bench_messaging with fixed-cost stand-ins, so the benchmark measures exactly
// the wiring that trains. What exists and who pushes where is decided by the plan
// (troupe/graph/placement.hpp); nothing here re-derives it.
//
//   bsp, backup:  compute w -> aggregator_k (source w) -> shard_k
//   hierarchical: compute w -> machine_aggregator_m_k -> aggregator_k -> shard_k
//   async, ssp:   compute w -> shard_k (source w)
// A hop the plan compresses (planned_route::compression) gets the two ends of
// compressed_hop.hpp: the receiver's in front of the aggregator or shard it leads to (so
// targets[i] is that end), the sender's in front of each sender's downstream.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>

#include <troupe/actors/aggregator_actor.hpp>
#include <troupe/actors/checkpoint_part_actor.hpp>
#include <troupe/actors/compressed_hop.hpp>
#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/actors/timeouts.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/graph/placement.hpp>

namespace troupe {

/// Called with each actor spawned, the plan's entry for it and, for an aggregator, the actor
/// it was given to push to (for monitoring, shutdown and wiring reports).
using spawn_observer =
  std::function<void(const push_target_actor& spawned, const planned_actor& entry,
                     const push_target_actor& downstream)>;

/// Shards and aggregators by plan actor index (invalid handles for the other roles).
using push_targets = std::vector<push_target_actor>;

/// How the shards and aggregators of a push side run.
struct push_side_options {
  /// The run's steps (epochs x plan.steps_per_epoch), which the shards refuse pushes beyond
  /// (shard_options::step_limit); 0: no limit.
  std::int64_t step_limit = 0;
  /// The aggregators keep each group's weights one step back, for adopted computes
  /// (aggregator_options::keep_previous; on_worker_loss = adopt).
  bool rewindable = false;
  /// Where the shards record their applies and the aggregators their barriers, each on
  /// tracks named after its plan actor (shard_options, aggregator_options). Null: nowhere.
  std::shared_ptr<timeline_recorder> timeline;
  std::string track_suffix; ///< after each track's name (" (backup)" for a node's backups)
};

/// Spawns every shard and aggregator of `plan` in plan order. Each shard's keys are cut from
/// `initial` (parameter-shaped start values by slot; each shard copies its keys) and named by
/// the plan. Throws std::invalid_argument if `initial` does not match the plan's parameters
/// (only read where shards are spawned: a node without shards may pass none).
push_targets spawn_push_side(caf::actor_system& system, const placement_plan& plan,
                             const std::vector<tensor>& initial, const optimizer_options& optimizer,
                             const spawn_observer& spawned, const push_side_options& options = {});

/// Gives the push target at plan actor index `actor`, which lives on another node: a proxy
/// reaching it (troupe/cluster/remote_proxies.hpp).
using remote_push_target = std::function<push_target_actor(std::size_t actor)>;

/// Gives the compute actor at plan actor index `actor`, which lives on another node.
using remote_compute = std::function<compute_actor(std::size_t actor)>;

/// Gives the part of a cluster checkpoint that plan node `node` (a server or worker) keeps.
using remote_checkpoint_part = std::function<checkpoint_part_actor(int node)>;

/// How a node reaches the actors of other nodes. All empty for a one-process plan (a plan
/// that needs one then is an error naming the actor).
struct remote_actors {
  remote_push_target push_target;
  remote_compute compute;
  remote_checkpoint_part checkpoint_part; ///< the scheduler's, in a run with checkpoints
};

/// What spawn_push_side_of_node spawned, by plan actor index: every push target (the node's
/// own and the proxies for others), and the node's own shards once more with their own,
/// wider type (param_shard_actor: forget, snapshot), which a push target handle must not be
/// cast back to. Null where there is none.
struct push_side {
  push_targets targets;
  std::vector<param_shard_actor> shards;
  /// By plan index, the aggregators spawned here at their own type (targets[i] may be the
  /// receiving end of a compressed hop in front of one); null elsewhere.
  std::vector<aggregator_actor> aggregators;
  /// By plan index, the receiving end of a compressed hop into that actor, spawned here; null
  /// where no hop into it is compressed.
  std::vector<compressing_receiver_actor> receivers;
};

/// The push side of one process of a cluster run: the shards and aggregators the plan puts
/// on node `node`, in plan order, spawned as spawn_push_side does. Each push target on another
/// node that one of them (or a compute of this node) pushes to is `remote(index)`; the result
/// holds those proxies at their plan index too, so routes_of works unchanged. Targets nobody
/// here pushes to stay invalid.
push_side spawn_push_side_of_node(caf::actor_system& system, const placement_plan& plan, int node,
                                  const remote_push_target& remote,
                                  const std::vector<tensor>& initial,
                                  const optimizer_options& optimizer, const spawn_observer& spawned,
                                  const push_side_options& options = {});

/// Where pushes from other nodes enter node `node`, by shard: (shard, plan actor index) of
/// each actor here that a route from another node pushes to (in BSP the aggregator in front
/// of the shard, async the shard). What the node serves to peers (a channel's serving_registry).
std::vector<std::pair<std::uint32_t, std::size_t>> entry_points(const placement_plan& plan,
                                                                int node);

/// Compute `worker`'s routes, one per shard in shard order (push_group::shard indexes them):
/// the actor it pushes that shard's keys to, the keys, and its source index there.
std::vector<shard_route> routes_of(const placement_plan& plan, const push_targets& targets,
                                   int rank);

/// `routes` (compute `worker`'s, from routes_of) with the sender's end of a compressed hop
/// (compressed_hop.hpp) in front of each target whose route the plan compresses; one per
/// route, as each holds the worker's own residuals and weights.
std::vector<shard_route> compressing_routes(caf::actor_system& system, const placement_plan& plan,
                                            std::vector<shard_route> routes, int rank);

/// Each shard's own route (the shard itself, its keys), for pulling the final weights.
std::vector<shard_route> shard_routes(const placement_plan& plan, const push_targets& targets);

} // namespace troupe
