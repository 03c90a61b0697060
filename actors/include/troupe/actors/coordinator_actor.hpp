// The coordinator actor: drives epochs. It tells the compute actors to train an epoch, waits
// for all of them, merges their reports, then (every `validate_every` epochs, and after the
// last) has the first one validate, and forwards every report to the metrics actor.
//
// Protocol (dynamically typed):
//   (run_atom) -> training_result   runs every epoch, then flushes the metrics actor and
//                                   answers with the phase reports; the first failure of any
//                                   actor ends the run and is the answer
// Sends (end_epoch_atom, epoch) to the compute actors still training once `finish_after` of
// them have finished (backup workers: the stragglers' remaining batches are skipped).
//
// The coordinator never touches tensors: epochs and reports are all it sees, which is what lets
// the same actor drive one process or, later, many nodes.
#pragma once

#include <cstdint>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

namespace troupe {

struct coordinator_options {
  std::int64_t epochs = 1;
  std::int64_t first_epoch = 0;
  bool validate = true;
  std::int64_t validate_every = 1;  ///< validate after every Nth epoch, and after the last
  /// Backup workers: once this many compute actors finished an epoch, the others are told to
  /// end theirs after the step in flight (0: everyone trains the whole epoch).
  std::size_t finish_after = 0;
};

caf::actor spawn_coordinator(caf::actor_system& system, std::vector<caf::actor> computes,
                             caf::actor metrics, coordinator_options options);

} // namespace troupe
