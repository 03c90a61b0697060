// The placement plan of a training job: every actor a run spawns (its role, its node, its
// options), every message route between them with what it carries per step, the key plan the
// shards own, and the steps each epoch takes. It is the one place these are decided: the
// in-process session spawns what it lists, a node of a cluster will spawn its own part of it,
// and `troupe check` / `troupe graph` print it. Nothing else derives the wiring.
//
// The plan is a pure function of the job and a few facts about its data (data_facts): sizes
// come from building the model once and from plan_keys, so the keys, pushes and bytes it
// shows are the ones that travel. Its `hash` (FNV-1a 64 over canonical_text) lets peers check
// that they planned the same job before they talk.
//
// The wiring (as actors/topology_wiring.cpp spawns it) follows the topology's route program
// (topology_options::levels), for each shard k:
//   loader w feeds compute w (data part w of W); one validation loader serves every compute.
//   no level:          compute w -> shard_k (source w)                       (async, ssp)
//   all:               compute w -> aggregator_k (source w) -> shard_k       (bsp, backup); with
//                      a single worker there is nothing to sum: compute 0 -> shard_k
//   machine:           machine m holds workers [m*W/M, (m+1)*W/M); compute w ->
//                      machine_aggregator_m_k (source w - m*W/M) -> shard_k (source m)
//   machine, all:      ... machine_aggregator_m_k -> aggregator_k (source m) -> shard_k
//                      (hierarchical)
//   shard_k answers every push with the weights of its keys; the answers travel back along
//   the chain (route shard_k -> compute w).
//   The coordinator drives the computes (control) and reports to metrics; computes report to
//   metrics after every step.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <troupe/graph/config/key_assignment.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/graph/roles.hpp>
#include <troupe/graph/value_hash.hpp>
#include <troupe/io/dataset.hpp>

namespace troupe {

/// What the plan needs to know about the job's datasets. A plan made without opening the data
/// passes 0 examples (steps per epoch then stay 0, "unknown") or expected_data_facts.
struct data_facts {
  shape_t sample_shape{1, 28, 28};      ///< one example, C x H x W (the model's input)
  int classes = 10;                     ///< the model's outputs
  std::int64_t train_examples = 0;      ///< 0: unknown
  std::int64_t validation_examples = 0; ///< 0: unknown
};

/// The facts of opened datasets.
data_facts data_facts_of(const dataset& train, const dataset& validation);
/// The facts the job's datasets have when they are the standard files (fashion-mnist and
/// mnist: 60000 train / 10000 test examples of 1x28x28, cifar10: 50000 / 10000 of 3x32x32,
/// 10 classes, or a subset's class count and first N; synthetic: from the job's options), for
/// planning without opening them. For a
/// dataset name it does not know: the job's model input and classes, examples unknown (0).
data_facts expected_data_facts(const training_job& job);

enum class route_carries {
  batches,            ///< loader -> compute, one batch per step
  validation_batches, ///< validation loader -> compute, one batch per validation step
  gradients,          ///< compute -> aggregator or shard: one shard's keys
  summed_gradients,   ///< aggregator -> aggregator or shard
  weights,            ///< shard -> compute, as the answers to the pushes
  control,            ///< coordinator -> compute: train, validate, end epoch
  reports,            ///< compute or coordinator -> metrics
};
/// "batches", "validation batches", "gradients", "summed gradients", "weights", ...
const char* to_string(route_carries carries);
/// Gradients or summed gradients: a route on which the sender pushes to the receiver (and
/// the weights come back as the answers).
bool is_push(route_carries carries);

/// The processes of a run. A single-process run has one node (`process`); a cluster run has
/// the scheduler (node 0), then the servers, then the workers. `ctl` is no node of a plan: it
/// names troupe ctl, an operator's client of a cluster run's scheduler, on the wire.
enum class node_kind { process, scheduler, server, worker, ctl };
/// "process", "scheduler", "server", "worker", "ctl".
const char* to_string(node_kind kind);
/// The kind `to_string` spells `text`, or none.
std::optional<node_kind> node_kind_named(const std::string& text);

struct planned_node {
  node_kind kind = node_kind::process;
  int rank = 0;     ///< within its kind
  std::string name; ///< "process", "scheduler", "server_0", "worker_1"
};

/// One actor. Fields that do not apply to its role keep their defaults.
struct planned_actor {
  plan_role role = plan_role::compute;
  int index = 0;    ///< within its role, in the order plan.actors lists them
  int node = 0;     ///< index into plan.nodes: the process it lives in
  std::string name; ///< loader_0, validation_loader (validation_loader_1 in a cluster),
                    ///< compute_1, aggregator_0 (of shard 0),
                    ///< machine_aggregator_1_0 (machine 1, shard 0), shard_2, coordinator,
                    ///< metrics
  int rank = -1;    ///< loaders, computes: the compute rank, i.e. data part `rank` of plan.workers
  int machine = -1; ///< machine aggregators; loaders and computes of a hierarchical plan
  int shard = -1;   ///< shards (== index) and aggregators (the shard whose chain they are)
  /// Aggregators (aggregator_options): sources per step, contributions that complete a step
  /// (== sources unless backup), and this aggregator's source index downstream.
  int sources = 0;
  int need = 0;
  int position = 0;
  bool deterministic = true;
  /// Shards: their keys, indices into plan.key_table (shard order, the order the shard keeps
  /// them); the workers whose pushes it counts and the staleness bound (shard_options).
  std::vector<std::size_t> keys;
  int workers = 0;
  int staleness = -1; ///< -1 unless ssp
  /// Loaders: batches of their part per epoch (validation loader: per validation pass; 0:
  /// unknown) and the cap the session sets (steps_per_epoch in synchronous topologies, else 0).
  std::int64_t batches = 0;
  std::int64_t batch_limit = 0;
  /// Coordinator: compute actors whose finished epoch ends it for all (backup: workers -
  /// backups; 0: every compute trains the whole epoch).
  int finish_after = 0;
  /// Coordinator, with aggregate(machine) and backups: the epoch ends once this many machines
  /// each had `finish_after` computes (0: all of theirs) finish it. 0: finish_after counts
  /// computes over all machines.
  int finish_machines = 0;
};

/// One message route. Per-step figures are for one training step (validation batches: one
/// validation step); control and report routes carry no tensors and count 0 bytes.
struct planned_route {
  std::size_t from = 0, to = 0; ///< indices into plan.actors
  route_carries carries = route_carries::batches;
  int shard = -1;         ///< gradients, summed gradients, weights: the shard whose keys travel
  int source = -1;        ///< gradients, summed gradients: the `worker` index the sender's pushes
                          ///< carry on this route, i.e. its source index at `to`
  std::int64_t keys = 0;  ///< keys (whole parameters or slices) per step; 0 for batches
  std::int64_t bytes = 0; ///< bytes per step
  std::int64_t messages = 0; ///< messages per step (pushes, or their weight answers)
  /// Gradient routes: how the hop compresses its pushes and answers (compressed_hop.hpp);
  /// `bytes` stays the uncompressed figure.
  compression_spec compression{};
};

/// A model parameter, in slot order.
struct planned_parameter {
  std::string name; ///< "conv1.weight"
  shape_t shape;
  std::int64_t numel = 0;
  bool weight_decay = true;
  /// What one sample's forward costs at this slot (model::forward_work_by_slot); 0 for given
  /// parameters (a benchmark's stand-in model), where it is not known. A node's business only:
  /// it orders a paced channel's pushes (frame_priority.hpp), so the plan's hash leaves it out.
  double forward_work = 0;
};

/// One key of the key plan, named as the shard names it.
struct planned_key {
  std::size_t shard = 0; ///< index into plan.keys.shards (== the shard actor's index)
  std::size_t index = 0; ///< within that shard's keys
  key_slice slice;
  std::string name; ///< key_name(parameter name, slice): "fc6.weight[0:1048576]"
};

/// A parameter above slice_bytes, cut into slices spread over the shards.
struct sliced_parameter {
  std::string name;
  std::int64_t bytes = 0; ///< the whole parameter
  std::int64_t slices = 0;
};

/// What one shard owns and receives.
struct shard_load {
  std::int64_t keys = 0;
  std::int64_t bytes = 0;
  std::int64_t pushes = 0; ///< pushes from each worker per step
};

struct placement_plan {
  // The job's shape, as planned.
  std::string topology = "bsp";          ///< the topology's name (topology_options::name)
  std::vector<aggregation_level> levels; ///< the route program: compute -> levels -> shard
  int workers = 1;
  int machines = 1;    ///< with aggregate(machine): machine groups; otherwise 1
  bool overlap = true; ///< pushes leave during backward
  std::vector<compression_spec> compression; ///< by push hop (topology_options::compression)
  key_plan_options key_options;
  std::int64_t train_batch = 0, validation_batch = 0; ///< examples per batch
  bool drop_last = false;                             ///< training batches
  data_facts data;

  // The model and its keys.
  std::vector<planned_parameter> parameters;
  std::int64_t parameter_count = 0;     ///< trainable scalars
  key_plan keys;                        ///< plan_keys verbatim: each shard's keys, push groups
  std::vector<planned_key> key_table;   ///< every key, shard by shard in key order
  std::vector<sliced_parameter> sliced; ///< in slot order
  std::vector<shard_load> shard_loads;  ///< per shard
  std::int64_t keys_per_step = 0;       ///< keys each worker pushes per step (all shards)
  std::int64_t pushes_per_step = 0;     ///< pushes (push groups) each worker sends per step

  // Steps. 0 where the examples are unknown.
  std::int64_t steps_per_epoch = 0; ///< synchronous: the fewest of worker_batches; else most
  std::vector<std::int64_t> worker_batches; ///< per worker: batches of its part per epoch
  std::int64_t validation_batches = 0;      ///< per validation pass

  /// The processes (job.nodes): one, or the scheduler, servers and workers of a cluster.
  /// The scheduler holds the coordinator and metrics; server s the shards s*K/S..(s+1)*K/S-1
  /// and their aggregators; worker process v the loaders and computes of workers
  /// v*W/V..(v+1)*W/V-1, its machine's aggregators (hierarchical: machine v) and validation
  /// loader v, which serves part v of the validation set to the computes beside it.
  std::vector<planned_node> nodes;
  /// Listed in an order the session can spawn them: metrics, shards, aggregators, machine
  /// aggregators, validation loader, loaders, computes, coordinator; every actor comes after
  /// the actors it holds handles of (push targets, its loaders, metrics, the computes).
  std::vector<planned_actor> actors;
  /// Batches, gradients by worker and shard, summed gradients, weights by shard and worker,
  /// then validation batches, control and reports.
  std::vector<planned_route> routes;
  std::uint64_t hash = 0; ///< fnv1a_64(canonical_text(*this))

  /// A barrier stands between computes and shards: every compute takes steps_per_epoch steps.
  bool synchronous() const { return !levels.empty(); }
  /// The shards answer each machine's aggregator, which answers its computes (the route set's
  /// last level, the one pushing to the shards, sums a machine: `shard -> aggregate(machine)`).
  bool answers_through_machines() const {
    return !levels.empty() && levels.back().scope == aggregation_scope::machine;
  }

  /// Indices into actors of the actors of `role`, by index within the role.
  std::vector<std::size_t> actors_of(plan_role role) const;
  /// Indices into actors of the actors that live on node `node`, in plan order.
  std::vector<std::size_t> actors_on(int node) const;
  /// The index into actors of actor `index` of `role`; throws std::out_of_range.
  std::size_t actor(plan_role role, int index) const;
  /// Indices into routes of the routes leaving / reaching actor `a`, in route order.
  std::vector<std::size_t> routes_from(std::size_t a) const;
  std::vector<std::size_t> routes_to(std::size_t a) const;
  /// The route on which actor `a` (a compute or an aggregator) pushes shard `shard`'s keys;
  /// throws std::out_of_range if it has none.
  const planned_route& push_route(std::size_t a, int shard) const;
  /// The route compute `worker` pushes shard `shard`'s gradients on: its target is the actor
  /// its shard_route holds, its source the route's source_index.
  const planned_route& gradient_route(int rank, int shard) const;
};

/// What failed while planning, so a caller can point at the cause (a config statement).
enum class placement_subject {
  job,     ///< the job itself is inconsistent (check_job, plan_keys)
  model,   ///< the network cannot take the data's example shape or classes
  data,    ///< a worker's data part holds no batch
  shards,  ///< the shards do not divide over the server processes
  workers, ///< the computes do not divide over the worker processes
};

class placement_error : public std::invalid_argument {
public:
  placement_error(placement_subject subject, const std::string& what)
      : std::invalid_argument(what), subject_(subject) {}
  placement_subject subject() const { return subject_; }

private:
  placement_subject subject_;
};

/// The plan of `job` on data with `data`'s facts. Builds the model once (job.model with the
/// data's sample shape and classes) to size the parameters. Throws placement_error.
placement_plan plan_placement(const training_job& job, const data_facts& data);
/// The same for given parameters instead of job.model's (a benchmark's stand-in model).
placement_plan plan_placement(const training_job& job, const data_facts& data,
                              std::vector<planned_parameter> parameters);

/// Everything the plan decides, one fact per line, integers only (no pointers, no floats,
/// no std::hash), so equal plans render equal text on every platform. Leaves out `hash`.
std::string canonical_text(const placement_plan& plan);

} // namespace troupe
