// Wires and runs one single-process training job:
//
//   train loader --batch--> compute --gradients--> [aggregators] --> param shard(s)
//                             ^-------------------- weights ---------------------'
//   validation loader --batch--> compute            coordinator drives epochs, metrics reports
//
// The topology (actors/topology_wiring.hpp) decides what stands between compute and shards.
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

#include <troupe/actors/loader_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/actors/topology_wiring.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/dataset.hpp>

namespace troupe {

/// Where a session's output goes. Process-local: never part of the job.
struct session_output {
  std::ostream* log = nullptr;  ///< MXNet-style lines; null: silent
  std::int64_t display_batches = 100;
  bool progress_bar = false;
  std::string metrics_path;     ///< JSON lines, one per epoch; empty: none
};

/// Runs the whole job and returns the phase reports. Throws std::runtime_error (or io_error /
/// std::invalid_argument from the layers below) with the first failure's message.
training_result run_training(caf::actor_system& system, const training_job& job,
                             const session_output& output = {});

} // namespace troupe
