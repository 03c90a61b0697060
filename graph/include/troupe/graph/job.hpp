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
#include <vector>

#include <troupe/graph/config/key_assignment.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/dataset.hpp>
#include <troupe/kernels/gradient_codec.hpp>
#include <troupe/kernels/lr_schedule.hpp>
#include <troupe/kernels/optimizers/update_rule.hpp>
#include <troupe/kernels/sgd.hpp>

namespace troupe {

/// How the workers' gradients reach the parameter shards and how the weights come back: the
/// route program the config language's `topology` statement compiles to (graph/config/
/// topology_config.cpp), and the one thing the placement plan reads to wire a run.
///
/// A push travels compute -> levels[0] -> levels[1] ... -> shard. Each level is a barrier of
/// aggregators: `machine` sums the computes of one machine (computes split evenly over
/// `machines`), `all` sums every compute, or every machine when a machine level comes first.
/// A level completes a step with `need` contributions (0: all its sources; fewer: backup
/// workers, the late ones dropped). The shard answers whoever pushed to it (a compute, a
/// machine's aggregator, or the global aggregator), and answers fan back down the chain; a
/// shard with several sources applies each push on arrival (async between them) and, with
/// `staleness` >= 0, holds an answer to a source more than that many steps ahead of the
/// slowest (SSP). No level: async (or SSP). One `all` level: BSP.
enum class aggregation_scope { machine, all };
const char* to_string(aggregation_scope scope); ///< "machine", "all"

struct aggregation_level {
  aggregation_scope scope = aggregation_scope::all;
  int need = 0; ///< contributions that complete a step; 0: every source of the level
  bool operator==(const aggregation_level& o) const { return scope == o.scope && need == o.need; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, aggregation_level& x) {
  return f(x.scope, x.need);
}

/// The shipped presets, each a name for one route program (use_preset). The config language
/// expands them to route text (`troupe check` prints it).
///   bsp:          compute -> aggregate(all) -> shard -> compute(all)
///   async:        compute -> shard -> compute(sender)
///   ssp(s):       async, the shard answering no compute more than s steps ahead of the slowest
///   hierarchical: compute -> aggregate(machine) -> aggregate(all) -> shard -> compute(all)
///   backup(b):    bsp whose aggregate(all) needs workers - b contributions
enum class topology_kind { bsp, async, ssp, hierarchical, backup };
const char* to_string(topology_kind kind);

struct topology_options {
  /// What the config calls this topology: a preset's name, or the user's own for a route set
  /// no preset names. Printing and the plan's text only; the routes below decide.
  std::string name = "bsp";
  int workers = 1;  ///< compute actors, each with its own replica and data part
  int machines = 1; ///< machine groups of computes (for machine-scope levels)
  std::vector<aggregation_level> levels{aggregation_level{}}; ///< compute -> ... -> shard
  int staleness = -1;        ///< SSP bound of a shard with several sources; -1: none
  bool deterministic = true; ///< aggregators sum in source order (bit-identical reruns)
  bool overlap = true;       ///< push each group during backward, as soon as it is ready
  /// Channels write tensor frames (pushes, their answers, replicas) first layers first, the order
  /// the next forward needs them, rather than in the order backward made them (cluster runs).
  bool priority = true;
  key_plan_options keys; ///< slicing of big tensors, grouping of small ones
  /// By hop of the push path: [i] compresses the hop into levels[i], [levels.size()] the hop
  /// into the shard (compressed_hop.hpp). Empty: no hop is compressed. A hop that compresses
  /// answers must lead into a level without `need` (it answers all its sources alike).
  std::vector<compression_spec> compression;

  /// Whether a barrier stands anywhere between the computes and the shards: every compute
  /// then takes the same number of steps per epoch.
  bool synchronous() const { return !levels.empty(); }
  /// The level of `scope`, or null.
  const aggregation_level* level(aggregation_scope scope) const;
  /// Hop `hop`'s compression (none where `compression` is empty).
  compression_spec hop_compression(std::size_t hop) const;
};

/// Whether push hop `hop` (as topology_options::compression counts them) answers all its
/// sources the same weights at the same step, which compressed answers need: the hop into a
/// level without `need`, or into the shard from aggregate(all) (its one source).
bool answers_sources_alike(const std::vector<aggregation_level>& levels, std::size_t hop);

/// The hop where gradients leave their machine: the one into the first aggregate(all), or into
/// the shard where there is none (`--compression` compresses it).
std::size_t machine_exit_hop(const std::vector<aggregation_level>& levels);

/// The level of `scope` in `levels`, or null.
const aggregation_level* find_level(const std::vector<aggregation_level>& levels,
                                    aggregation_scope scope);
/// The sources of level `i` of `levels`: the computes of a machine (of the smallest, which
/// holds workers / machines), or, for `all`, every compute, or every machine after a machine
/// level.
int level_sources(const std::vector<aggregation_level>& levels, std::size_t i, int workers,
                  int machines);

/// Sets `t`'s routes (name, levels, staleness, machines) to preset `kind`'s. `argument` is the
/// preset's one parameter (ssp: staleness, default 2; hierarchical: machines, default 2;
/// backup: backup workers, default 1), negative for its default; t.workers must be set first
/// (backup's need is workers - backups). Throws std::invalid_argument for backups >= workers.
void use_preset(topology_options& t, topology_kind kind, int argument = -1);

/// Fields in declaration order, for CAF's serializers and value_hash.hpp (no CAF here).
/// Enums need no overload: CAF 0.17 and value_hash write an enum as its underlying integer
/// (an `inspect` for an enum would make CAF's data_processor::apply ambiguous).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, topology_options& x) {
  return f(x.name, x.workers, x.machines, x.levels, x.staleness, x.deterministic, x.overlap,
           x.priority, x.keys, x.compression);
}

/// Throws std::invalid_argument naming the first inconsistent value.
void check_topology(const topology_options& topology);

/// The update rule every shard applies (its kind and hyper-parameters), and the learning rate's
/// schedule.
struct optimizer_options : update_rule {
  lr_schedule_options schedule;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, optimizer_options& x) {
  return f(x.kind, x.sgd, x.beta1, x.beta2, x.eps, x.alpha, x.trust, x.schedule);
}

/// The processes a run spans. Both 0: one process (`troupe train`). Otherwise a cluster run
/// (`troupe node`, `troupe launch -n W -s S`): a scheduler, `servers` server processes holding
/// the shards (and the aggregators in front of them) and `workers` worker processes holding
/// the loaders and compute actors (and, hierarchical, one machine's aggregators each).
struct cluster_nodes {
  int servers = 0;
  int workers = 0;
  /// A worker process lost during training: the run stops (false), or goes on with the
  /// others (true; only where computes push straight to the shards, async or ssp: any
  /// aggregation level waits for each worker).
  bool continue_on_worker_loss = false;
  /// A worker process lost during training of a bsp job: another worker process adopts its
  /// compute ranks and recomputes the step in flight (on_worker_loss = adopt), so the run ends
  /// with the weights of a run that lost nothing.
  bool adopt_on_worker_loss = false;
  /// Backups of every server's shards (cluster.shard_backups): 0, or 1 for a backup of each
  /// server's shards on the next server process, promoted when that server is lost.
  int shard_backups = 0;
  bool single_process() const { return servers == 0 && workers == 0; }
};

/// The config value of on_worker_loss the fields say: "stop", "continue" or "adopt".
inline const char* worker_loss_policy(const cluster_nodes& x) {
  return x.adopt_on_worker_loss ? "adopt" : x.continue_on_worker_loss ? "continue" : "stop";
}

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, cluster_nodes& x) {
  return f(x.servers, x.workers, x.continue_on_worker_loss, x.adopt_on_worker_loss,
           x.shard_backups);
}

struct training_job {
  model_spec model; ///< sample_shape and classes are taken from the training data
  dataset_options train_data;
  dataset_options validation_data;
  batch_source_options train_batches; ///< part/parts are set per worker by the plan
  batch_source_options validation_batches;
  optimizer_options optimizer;
  int prefetch_depth = 3; ///< batches each loader builds ahead
  std::int64_t epochs = 10;
  bool validate = true;
  std::int64_t validate_every = 1; ///< validate after every Nth epoch, and after the last
  int shards = 1;                  ///< parameter shards (keys are spread over them)
  topology_options topology;
  cluster_nodes nodes; ///< processes; placement_plan puts actors on them
  /// Also count top-k accuracy, training and validation (MXNet's --top-k): 1..classes; 0: off.
  int top_k = 0;
  /// Fine-tuning (train.init_from, --init-from): the checkpoint whose weights the shards start
  /// from instead of the initializer's ("PREFIX-EPOCH" or a file: init_source,
  /// troupe/actors/weights_init.hpp); its momentum, counters, epoch and replica buffers are not
  /// used. In a cluster every server reads it, so it must name a file each of them sees. Empty:
  /// the initializer's weights.
  std::string init_from;
  /// With init_from: parameter-name prefixes that keep the initializer's weights
  /// (--reset-layers fc2: a fresh classifier).
  std::vector<std::string> reset_layers;
};

/// Every field in declaration order: what value_hash.hpp's job_hash covers and what CAF sends.
/// A new field must be added here too (value_hash_test.cpp changes each field in turn).
template <class Inspector> typename Inspector::result_type inspect(Inspector& f, training_job& x) {
  return f(x.model, x.train_data, x.validation_data, x.train_batches, x.validation_batches,
           x.optimizer, x.prefetch_depth, x.epochs, x.validate, x.validate_every, x.shards,
           x.topology, x.nodes, x.top_k, x.init_from, x.reset_layers);
}

/// Throws std::invalid_argument naming the first value no run could use (epochs < 0,
/// validate_every < 1, shards < 1, an inconsistent topology or schedule, server or worker
/// processes without the other, or negative, top_k < 0; top_k above the classes is the
/// plan's to refuse, which knows them).
void check_job(const training_job& job);

} // namespace troupe
