// One process's part of a placement plan, spawned and wired: the actors the plan puts on node
// `node` (in plan order), with proxies for the actors elsewhere that they talk to. A
// one-process plan has a single node holding everything, which is what the training session
// spawns; a cluster node (troupe/cluster/cluster_node.hpp) spawns its own part with proxies
// reaching the other processes over peer channels. What exists and who talks to whom is the
// plan's decision (troupe/graph/placement.hpp); nothing here re-derives it.
//
//   node holds            it spawns                            it needs from elsewhere
//   shards/aggregators    spawn_push_side_of_node              push targets it pushes to
//   loaders, computes     loaders, compute replicas            push targets of their routes
//   coordinator           coordinator (and the metrics actor)  the compute actors it drives,
//                                                              the shards (final weights)
//
// Thread-safety: spawn_node_part runs on the caller's thread; the handles it returns are
// CAF handles (thread-safe).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/coordinator_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/metrics_actor.hpp>
#include <troupe/actors/timeouts.hpp>
#include <troupe/actors/topology_wiring.hpp>
#include <troupe/actors/training_session.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/graph/placement.hpp>
#include <troupe/io/dataset.hpp>
#include <troupe/io/node_events.hpp>
#include <troupe/io/timeline.hpp>
#include <troupe/kernels/compute_device.hpp>

namespace troupe {

/// What the part spawns with, besides the plan.
struct node_part_options {
  int node = -1; ///< -1: every node of the plan (one process runs all of it)
  /// The part of a lost worker node, spawned by the worker process that adopts it in a run in
  /// flight: its computes are adopted (compute_wiring::adopted).
  bool adopted = false;
  /// With `node`: only the loaders and computes of these compute ranks (with the node's
  /// validation loaders), ranks that run apart from the rest of their node; empty: all of the
  /// node. A node with a machine's aggregators is not split (they sum its ranks in process).
  std::vector<int> ranks;
  /// With `adopted`: told (on the compute's thread) which step compute `worker` recomputes from.
  std::function<void(int rank, std::int64_t step)> on_rewound;
  remote_actors remote;
  /// Where this node's computes and coordinator report. Invalid: the node spawns the plan's
  /// metrics actor, with `metrics` options, when the plan puts it here.
  metrics_sink_actor metrics;
  metrics_options metrics_output;
  gradient_tap tap;
  request_timeouts timeouts;
  compute_spawn_options compute;
  /// The checkpoint part (spawn_checkpoint_part) on a thread of its own; false: scheduled,
  /// with compute.detached false too when a test's deterministic coordinator runs the part.
  bool detached_checkpoint_part = true;
  /// Where this node's compute actors run: the k-th compute spawned here on devices[k % size]
  /// (its replica moved there before it is spawned). Empty: the CPU.
  std::vector<compute_device> devices;
  /// CPUs the k-th compute spawned here binds to (compute_spawn_options::cpus), for k below
  /// the size; empty: none bound.
  std::vector<std::vector<int>> compute_cpus;
  /// The coordinator's gate between epochs (coordinator_options::between_epochs). Invalid: none.
  epoch_gate_actor between_epochs;
  /// Checkpoints: with a prefix or a checkpoint to resume, the part spawns a checkpoint actor
  /// beside the coordinator: in one process the one that writes a single file, in a cluster
  /// the manifest checkpoint asking every member's part (remote.checkpoint_part).
  std::string checkpoint_prefix;
  std::int64_t save_period = 1;
  /// Records of each save and restore (manifest_checkpoint_wiring::events). Null: none.
  std::shared_ptr<node_events> checkpoint_events;
  std::shared_ptr<const training_checkpoint> resume; ///< checked with check_resumable
  /// A cluster's scheduler restarted in training: the coordinator starts at this epoch and
  /// restores nothing (the members' computes and shards hold the run's state). -1: none.
  std::int64_t resume_at_epoch = -1;
  /// Where this node's computes and checkpoint record what they do (troupe/io/timeline.hpp);
  /// null: nowhere.
  std::shared_ptr<timeline_recorder> timeline;
  /// Called once the part is wired, with what it handed out (may be empty).
  std::function<void(const wiring_report&)> on_wired;
};

/// The data a node's loaders read: null where the node has no loader (servers, scheduler).
struct node_data {
  std::shared_ptr<const dataset> train;
  std::shared_ptr<const dataset> validation;
};

/// What one node spawned.
struct node_part {
  /// Every actor the part spawned (not the host's metrics sink), with its plan name.
  std::vector<std::pair<caf::actor, std::string>> spawned;
  push_targets targets; ///< by plan actor index: local ones and proxies
  /// By plan actor index: the shards spawned here, with their own type (forget, snapshot);
  /// null elsewhere.
  std::vector<param_shard_actor> own_shards;
  /// By plan actor index: the aggregators spawned here, with their own type (waits, stats);
  /// null elsewhere.
  std::vector<aggregator_actor> own_aggregators;
  std::vector<std::pair<int, local_compute_actor>> computes; ///< (worker, compute) spawned here
  coordinator_actor coordinator;                             ///< when the plan puts it here
  checkpoint_actor checkpoint; ///< beside the coordinator, in a run with checkpoints
  /// A server's or worker's part of a cluster checkpoint (its shards and computes), which it
  /// serves to the scheduler; null in one process and where the node holds neither.
  checkpoint_part_actor checkpoint_part;
  metrics_sink_actor metrics; ///< what the computes and coordinator report to
  /// The shards (own ones or proxies), for pulling the final weights: filled when the
  /// coordinator is here.
  std::vector<shard_route> shards;
  /// Exits every spawned actor.
  void shut_down();
  /// Exits the spawned actors named in `names` (a compute and its loader that move away) and
  /// forgets them; the rest of the part runs on.
  void shut_down_named(const std::vector<std::string>& names);
};

/// The model a job trains, with its input shape and classes from the data's facts.
model_spec model_of(const training_job& job, const data_facts& facts);

/// Parameter-shaped start values of `reference`, a model built from the job's spec (and so
/// its seed): what the shards start from wherever they live.
std::vector<tensor> initial_weights(model& reference);

metrics_options metrics_options_of(const training_job& job, const session_output& output);

/// Spawns node `options.node`'s part of `plan` into `part` (which keeps what was spawned
/// before a throw, for the caller to shut down). `initial` as for spawn_push_side (only read,
/// and only needed, when the node holds shards). Throws std::invalid_argument when the node has
/// loaders but `data` lacks their dataset, or the plan needs a remote actor and `options.remote`
/// gives none.
void spawn_node_part(caf::actor_system& system, const training_job& job, const placement_plan& plan,
                     const model_spec& spec, const std::vector<tensor>& initial,
                     const node_data& data, const node_part_options& options, node_part& part);

} // namespace troupe
