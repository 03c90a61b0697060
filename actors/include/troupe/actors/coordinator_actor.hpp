// The coordinator actor: drives epochs. It tells the compute actors to train an epoch, waits
// for all of them, merges their reports, then (every `validate_every` epochs, and after the
// last) has the validators validate (the first compute, or one per validation loader when
// the validation set is split, as over a cluster's worker processes), merges their reports
// in the order listed, and forwards every report to the metrics actor.
//
// Protocol: coordinator_actor
//   (run_atom) -> training_result   runs every epoch, then flushes the metrics actor and
//                                   answers with the phase reports; the first failure of any
//                                   actor ends the run and is the answer
// It monitors the compute actors and the metrics sink: one that terminates ends the run with
// errc::peer_down. Each epoch request has the `phase` timeout, the flush the `step` one.
// Sends (end_epoch_atom, epoch) to the compute actors still training once `finish_after` of
// them have finished (backup workers: the stragglers' remaining batches are skipped), or,
// with groups, once enough groups (machines) each had enough of theirs finish.
// With a checkpoint actor (checkpoint_actor.hpp), it sends (restore_atom) before the first
// epoch of a resumed run and (save_atom, e + 1) at the end of epoch e (after its validation)
// when a save is due, and goes on only once the answer is there, so a checkpoint holds the
// state between two epochs exactly; a failed restore or save ends the run.
// With a gate between epochs (coordinator_options::between_epochs) it asks
// (epoch_done_atom, e, due) once every compute has answered epoch e's training, and records
// e's training report and starts the next phase only once the gate has answered; a gate that
// fails ends the run, naming it; one that answers save_epoch has e saved after its validation
// (where the run saves checkpoints) although no save is due, and one that answers last_epoch
// makes e the run's last (its validation and its checkpoint are the last epoch's, then the run
// finishes).
//
// The coordinator never touches tensors: epochs and reports are all it sees, which is what lets
// the same actor drive one process or, later, many nodes.
#pragma once

#include <cstdint>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include <troupe/actors/checkpoint_actor.hpp>
#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/deadline.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/metrics_actor.hpp>
#include <troupe/actors/timeouts.hpp>

namespace troupe {

/// Runs a whole job: (run_atom) -> training_result. The training session offers the same.
using run_actor = caf::typed_actor<caf::replies_to<run_atom>::with<training_result>>;
using coordinator_actor = run_actor;

using epoch_done_atom = caf::atom_constant<caf::atom("epochdone")>;

/// What a gate between epochs says after epoch e's training: go on as planned, save e's
/// checkpoint although none is due (where the run saves them: troupe ctl checkpoint), or make e
/// the run's last (troupe ctl stop; saved as the last epoch is).
enum class after_gate : std::uint8_t { go_on, save_epoch, last_epoch };

/// A gate between epochs: (epoch_done_atom, e, due) -> after_gate is asked after epoch e's
/// training, once every compute has answered it (so all of its batch reports are on their way
/// to the metrics actor) and before e's training report is recorded; the report and the next
/// phase wait for the answer (an error ends the run). `due` is the
/// coordinator's deadline for the answer. Whatever the gate sends the metrics actor about
/// epoch e (an annotate_atom) thus lands before e's report: a cluster's scheduler adds each
/// node's traffic so. The coordinator knows nothing of what the gate does.
using epoch_gate_actor =
  caf::typed_actor<caf::replies_to<epoch_done_atom, std::int64_t, deadline>::with<after_gate>>;

struct coordinator_options {
  std::int64_t epochs = 1;
  std::int64_t first_epoch = 0;
  bool validate = true;
  std::int64_t validate_every = 1; ///< validate after every Nth epoch, and after the last
  /// Backup workers: once this many compute actors finished an epoch, the others are told to
  /// end theirs after the step in flight (0: everyone trains the whole epoch). With
  /// finish_groups, the count is per group (0: every compute of the group).
  std::size_t finish_after = 0;
  /// Backups inside machines: the group (machine) of each compute actor, by index; the epoch
  /// ends early once finish_groups_needed groups each had finish_after computes finish it.
  /// Empty: one group of all computes.
  std::vector<int> finish_groups;
  std::size_t finish_groups_needed = 0;
  request_timeouts timeouts;
  /// The compute actors (indices) that validate, each on its own part of the validation set.
  std::vector<std::size_t> validators{0};
  /// Asked after each epoch's training, with the `step` timeout (epoch_gate_actor); the run
  /// waits for its answer, so no step runs meanwhile. Invalid: none.
  epoch_gate_actor between_epochs;
  /// A compute whose request fails with errc::peer_down (its node was lost) is dropped: its
  /// part of the epoch counts as empty and it gets no further requests; the run fails only
  /// when none is left. Off: any failure ends the run.
  bool drop_lost_computes = false;
  /// Where checkpoints are saved and restored; invalid: none.
  checkpoint_actor checkpoint;
  /// Save after every epoch e with (e + 1) a multiple of this, and after the last. 0: never.
  std::int64_t save_period = 0;
  /// Restore the checkpoint actor's loaded checkpoint before the first epoch.
  bool restore = false;
};

/// `metrics` may be invalid (no reports). Throws std::invalid_argument for no compute actors,
/// negative epochs, validate_every < 1, no validator or one that is not a compute index, a
/// negative save_period, or saving or restoring without a checkpoint actor.
coordinator_actor spawn_coordinator(caf::actor_system& system, std::vector<compute_actor> computes,
                                    metrics_sink_actor metrics, coordinator_options options);

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::after_gate)
