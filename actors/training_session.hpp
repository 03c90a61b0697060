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
#include "graph/zoo.hpp"
#include "io/batch_source.hpp"
#include "io/dataset.hpp"

namespace troupe {

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
  // output
  std::ostream* log = nullptr;  ///< MXNet-style lines; null: silent
  std::int64_t display_batches = 100;
  bool progress_bar = false;
  std::string metrics_path;     ///< JSON lines, one per epoch; empty: none
};

/// Splits parameter slots over `shards` shards, largest first onto the least loaded shard,
/// so every shard gets a similar number of bytes. Deterministic.
std::vector<std::vector<std::size_t>> assign_keys(const std::vector<std::int64_t>& sizes,
                                                  int shards);

/// Runs the whole job and returns the phase reports. Throws std::runtime_error (or io_error /
/// std::invalid_argument from the layers below) with the first failure's message.
training_result run_training(caf::actor_system& system, const training_options& options);

} // namespace troupe
