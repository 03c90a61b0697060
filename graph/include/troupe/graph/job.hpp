// A training job as a value: what to train, on which data, with which optimizer and topology.
// It holds no stream, actor or file handle, so it can be copied, compared, hashed and (later)
// sent to another process; where output goes is the session's business (session_output in
// troupe/actors/training_session.hpp). The config language (troupe/graph/config/job_config.hpp)
// and the CLI flags both end in one of these.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include <troupe/graph/config/key_assignment.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/dataset.hpp>
#include <troupe/kernels/lr_schedule.hpp>
#include <troupe/kernels/sgd.hpp>

namespace troupe {

/// How the workers' gradients reach the parameter shards. One type for the config language
/// (`topology bsp {...}`) and the wiring.
///   bsp:          all workers -> aggregator (sums, in worker order) -> shard -> all workers
///   async:        each worker -> shard directly; each push applied on arrival
///   ssp:          async, but a worker may be at most `staleness` steps ahead of the slowest
///   hierarchical: workers -> per-machine aggregator -> global aggregator -> shard
///   backup:       bsp whose aggregator takes the first workers - backup_workers contributions
enum class topology_kind { bsp, async, ssp, hierarchical, backup };

const char* to_string(topology_kind kind);
/// bsp, backup and hierarchical: every worker takes part in every step.
bool synchronous(topology_kind kind);

struct topology_options {
  topology_kind mode = topology_kind::bsp;
  int workers = 1;            ///< compute actors, each with its own replica and data part
  int staleness = 0;          ///< ssp bound
  int backup_workers = 0;     ///< backup: contributions that may be dropped per step
  int machines = 1;           ///< hierarchical: workers are split evenly over machines
  bool deterministic = true;  ///< aggregators sum in worker order (bit-identical reruns)
  bool overlap = true;        ///< push each group during backward, as soon as it is ready
  key_plan_options keys;      ///< slicing of big tensors, grouping of small ones
  /// Experiment knob: worker `straggler` waits `straggle_ms` after every backward. -1: none.
  int straggler = -1;
  int straggle_ms = 0;
};

/// Fields in declaration order, for CAF's serializers and value_hash.hpp (no CAF here).
/// `topology_kind` needs no overload: CAF 0.17 and value_hash write an enum as its underlying
/// integer (an `inspect` for an enum would make CAF's data_processor::apply ambiguous).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, topology_options& x) {
  return f(x.mode, x.workers, x.staleness, x.backup_workers, x.machines, x.deterministic,
           x.overlap, x.keys, x.straggler, x.straggle_ms);
}

/// Throws std::invalid_argument naming the first inconsistent value.
void check_topology(const topology_options& topology);

struct optimizer_options {
  sgd_options sgd;
  lr_schedule_options schedule;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, optimizer_options& x) {
  return f(x.sgd, x.schedule);
}

/// The processes a run spans. Both 0: one process (`troupe train`). Otherwise a cluster run
/// (`troupe node`, `troupe launch -n W -s S`): a scheduler, `servers` server processes holding
/// the shards (and the aggregators in front of them) and `workers` worker processes holding
/// the loaders and compute actors (and, hierarchical, one machine's aggregators each).
struct cluster_nodes {
  int servers = 0;
  int workers = 0;
  /// A worker process lost during training: the run stops (false), or goes on with the
  /// others (true; async only: every other topology waits for each worker).
  bool continue_on_worker_loss = false;
  bool single_process() const { return servers == 0 && workers == 0; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_nodes& x) {
  return f(x.servers, x.workers, x.continue_on_worker_loss);
}

struct training_job {
  model_spec model;  ///< sample_shape and classes are taken from the training data
  dataset_options train_data;
  dataset_options validation_data;
  batch_source_options train_batches;  ///< part/parts are set per worker by the plan
  batch_source_options validation_batches;
  optimizer_options optimizer;
  int prefetch_depth = 3;           ///< batches each loader builds ahead
  std::int64_t epochs = 10;
  bool validate = true;
  std::int64_t validate_every = 1;  ///< validate after every Nth epoch, and after the last
  int shards = 1;                   ///< parameter shards (keys are spread over them)
  topology_options topology;
  cluster_nodes nodes;              ///< processes; placement_plan puts actors on them
  /// Also count top-k accuracy, training and validation (MXNet's --top-k): 1..classes; 0: off.
  int top_k = 0;
};

/// Every field in declaration order: what value_hash.hpp's job_hash covers and what CAF sends.
/// A new field must be added here too (value_hash_test.cpp changes each field in turn).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, training_job& x) {
  return f(x.model, x.train_data, x.validation_data, x.train_batches, x.validation_batches,
           x.optimizer, x.prefetch_depth, x.epochs, x.validate, x.validate_every, x.shards,
           x.topology, x.nodes, x.top_k);
}

/// Throws std::invalid_argument naming the first value no run could use (epochs < 0,
/// validate_every < 1, shards < 1, an inconsistent topology or schedule, server or worker
/// processes without the other, or negative, top_k < 0; top_k above the classes is the
/// plan's to refuse, which knows them).
void check_job(const training_job& job);

} // namespace troupe
