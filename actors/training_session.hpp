// Wires and runs one single-process training job:
//
//   train loader --batch--> compute --gradients--> param shard(s) --weights--> compute
//   validation loader --batch--> compute            coordinator drives epochs, metrics reports
//
// This is the one place that turns typed options into actors. Datasets are opened and the
// model is built before anything is spawned, so bad input fails with a clear message before a
// single actor runs.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/loader_actor.hpp"
#include "actors/messages.hpp"
#include "actors/param_shard_actor.hpp"
#include "graph/config/key_assignment.hpp"  // assign_keys: how keys split over shards
#include "graph/zoo.hpp"
#include "io/batch_source.hpp"
#include "io/dataset.hpp"

namespace troupe {

/// How the compute actors' gradients reach the shards (the training topology).
///   bsp:          all workers -> aggregator (sums, in worker order) -> shards -> all workers
///   async:        each worker -> shards directly; each push applied on arrival
///   ssp:          async, but a worker may be at most `staleness` steps ahead of the slowest
///   hierarchical: workers -> per-machine aggregator -> global aggregator -> shards
///   backup:       bsp whose aggregator takes the first workers - backup_workers contributions
enum class sync_mode { bsp, async, ssp, hierarchical, backup };

struct topology_options {
  sync_mode mode = sync_mode::bsp;
  int workers = 1;            ///< compute actors, each with its own replica and data part
  int staleness = 0;          ///< ssp bound
  int backup_workers = 0;     ///< backup: contributions that may be dropped per step
  int machines = 1;           ///< hierarchical: workers are split evenly over machines
  bool deterministic = true;  ///< aggregators sum in worker order (bit-identical reruns)
  /// Experiment knob: worker `straggler` waits `straggle_ms` after every backward. -1: none.
  int straggler = -1;
  int straggle_ms = 0;
};

struct training_options {
  model_spec model;
  dataset_options train_data;
  dataset_options validation_data;
  batch_source_options train_batches;
  batch_source_options validation_batches;
  shard_options optimizer;
  loader_options loader;
  std::int64_t epochs = 10;
  bool validate = true;
  int shards = 1;
  topology_options topology;
  // output
  std::ostream* log = nullptr;  ///< MXNet-style lines; null: silent
  std::int64_t display_batches = 100;
  bool progress_bar = false;
  std::string metrics_path;     ///< JSON lines, one per epoch; empty: none
};

/// Runs the whole job and returns the phase reports. Throws std::runtime_error (or io_error /
/// std::invalid_argument from the layers below) with the first failure's message.
training_result run_training(caf::actor_system& system, const training_options& options);

} // namespace troupe
