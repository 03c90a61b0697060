// The atoms and message types that Troupe's actors exchange, and the protocol every actor
// that takes gradients speaks (push_target_actor).
//
// Tensors travel as `tensor` handles: a message carries a reference to the storage, never a
// copy of the bytes (see troupe/kernels/tensor.hpp). The per-step messages (loader_item,
// gradient_push, weight_set) and the checkpoint's snapshots (shard_snapshot, replica_state)
// are local-only CAF message types: crossing a process boundary is the cluster layer's job,
// which encodes them as Cap'n Proto and never hands CAF a raw tensor (checkpoints do not
// cross processes yet).
// Reports and results (batch_report, phase_report, training_result) are small or rare and
// have `inspect` overloads, so CAF itself can carry them to another process.
//
// Naming: `<verb>_atom` for atoms (CAF 0.17 limits atom text to 10 characters), nouns for
// messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/actors/deadline.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/checkpoint_file.hpp>
#include <troupe/kernels/gradient_codec.hpp>
#include <troupe/kernels/optimizers/update_rule.hpp>
#include <troupe/kernels/tensor.hpp>

namespace troupe {

using next_atom = caf::atom_constant<caf::atom("next")>;          // loader: give me a batch
using epoch_atom = caf::atom_constant<caf::atom("epoch")>;        // loader: start epoch e
using push_atom = caf::atom_constant<caf::atom("push")>;          // compute -> shard: gradients
using pull_atom = caf::atom_constant<caf::atom("pull")>;          // compute -> shard: weights
using train_atom = caf::atom_constant<caf::atom("train")>;        // coordinator -> compute
using validate_atom = caf::atom_constant<caf::atom("validate")>;  // coordinator -> compute
using run_atom = caf::atom_constant<caf::atom("run")>;            // host -> session -> coordinator
using fill_atom = caf::atom_constant<caf::atom("fill")>;          // loader -> itself: prefetch
using flush_atom = caf::atom_constant<caf::atom("flush")>;        // metrics: finish output
using annotate_atom = caf::atom_constant<caf::atom("annotate")>;  // host -> metrics: epoch extras
using stats_atom = caf::atom_constant<caf::atom("stats")>;        // aggregator: counters
using watchdog_atom = caf::atom_constant<caf::atom("watchdog")>;  // compute -> itself: timeouts
using end_epoch_atom = caf::atom_constant<caf::atom("endepoch")>; // coordinator -> compute: stop
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;  // checkpoint -> shard, compute
using restore_atom = caf::atom_constant<caf::atom("restore")>;    // checkpoint -> shard, compute
using save_atom = caf::atom_constant<caf::atom("save")>;          // coordinator -> checkpoint
using position_atom = caf::atom_constant<caf::atom("position")>;  // node -> compute: its epoch

/// A batch from a loader, or the mark that the epoch has no more batches (`end == true`).
struct loader_item {
  batch data;
  bool end = false;
};

/// Gradients of one step for some of the keys a shard owns (one push group, see
/// graph/config/key_assignment.hpp): `keys` are indices into the shard's key list, ascending,
/// and `gradients` holds one tensor per listed key, in that order.
struct gradient_push {
  std::int64_t step = 0;         ///< global step counter of the pushing worker
  double epoch_position = 0;     ///< fractional epoch, drives the learning-rate schedule
  std::vector<std::size_t> keys; ///< which of the shard's keys
  std::vector<tensor> gradients; ///< one per key, same shapes as the weights; each the mean
                                 ///< over the pusher's `samples` examples
  int source = 0;                ///< the pusher's index among this route's sources (among an
                                 ///< aggregator's inputs, or the compute's rank)
  std::int64_t samples = 0;      ///< examples behind the gradients (weights of an average)
  deadline due;                  ///< when the pusher gives up on the answer (timeouts.hpp)
  /// What the gradients were quantized for on a compressed route (gradient_codec.hpp): each
  /// value is one the encoding holds exactly, so the wire packs it without loss. 2-bit: the
  /// scale of every block of two_bit_block values in `scales`, tensor after tensor (the
  /// threshold, or the fitted scales); otherwise `scales` is empty.
  value_encoding encoding = value_encoding::none;
  std::vector<float> scales;
};

/// Weights a shard serves for some of its keys (those of the push answered, or all of them
/// for a pull), after `updates` pushes have been applied to them. (A "step" is always a
/// training step: gradient_push::step.)
struct weight_set {
  std::int64_t updates = 0;
  std::vector<std::size_t> keys; ///< indices into the shard's key list, as in the push
  std::vector<tensor> weights;   ///< one per key, in `keys` order
  float learning_rate = 0;       ///< the rate used for the last update (for the logs)
  std::int64_t before_step = -1; ///< answering a rewind: the step these weights precede
  /// none: `weights` are the weights. Otherwise (a compressed answer, compressed_hop.hpp)
  /// they are deltas to add to what the receiver holds, quantized for this encoding; 2-bit:
  /// the scale of every block of two_bit_block values in `scales`, tensor after tensor.
  value_encoding encoding = value_encoding::none;
  std::vector<float> scales;
  /// Set by the sender's end of a compressed hop (compressed_hop.hpp) on the answer to a
  /// push it quantized: the gradient values the push carried, and how many of them it sent
  /// non-zero (the rest stayed in its residual). 0 and 0 where no hop quantized the push.
  std::int64_t values_pushed = 0, values_sent = 0;
};

/// A parameter shard's whole state, for a checkpoint: one tensor per key of the shard, in its
/// key order, and its counters. Taken and restored between steps only.
struct shard_snapshot {
  std::vector<tensor> weights;
  optimizer_kind optimizer = optimizer_kind::sgd; ///< whose state `state` is
  /// Per key: the optimizer's state tensors (optimizer_state_names order; SGD's one is the
  /// velocity, "momentum") and its update count.
  std::vector<optimizer_state> state;
  shard_counters counters;
};

/// What a compute actor measured over one training batch.
/// A push group's last step a shard applied from one source (param_shard_actor's applied).
struct applied_group {
  std::int32_t source = 0;
  std::vector<std::size_t> keys; ///< the group's keys (ascending)
  std::int64_t step = -1;
};

struct batch_report {
  int rank = 0; ///< the compute's rank
  std::int64_t epoch = 0;
  std::int64_t index = 0;   ///< batch number in the epoch
  std::int64_t batches = 0; ///< batches in the epoch
  std::int64_t samples = 0;
  std::int64_t correct = 0;
  double loss_sum = 0;
  float learning_rate = 0;
  int top_k = 0;                  ///< the k of top_k_correct; 0: top-k is not counted
  std::int64_t top_k_correct = 0; ///< samples whose label ranks among the top k logits
  double step_seconds = 0;        ///< the step itself: forward and backward, its pushes sent
  /// Since the compute's previous step ended: waiting for its weights and its batch (a
  /// barrier's wait, under BSP). 0 for an epoch's first step.
  double wait_seconds = 0;
  /// Of the gradient values this compute's compressed pushes carried since its last report
  /// (as their answers came back: weight_set::values_pushed), how many went out non-zero.
  /// 0 and 0 without compressed pushes.
  std::int64_t values_pushed = 0, values_sent = 0;
};

/// One phase (training or validation) of one epoch, as the coordinator reports it.
struct phase_report {
  std::int64_t epoch = 0;
  bool validation = false;
  std::int64_t samples = 0;
  std::int64_t correct = 0;
  double loss_sum = 0;
  double seconds = 0; ///< wall time of the phase, loading included
  /// Of `seconds`, the time in training steps (forward, backward, pushes sent); the rest is
  /// waiting for weights and batches. 0 for validation.
  double step_seconds = 0;
  /// Bad records the loaders left out (RecordIO data with skip_bad_records).
  std::int64_t skipped = 0;
  int top_k = 0;                  ///< the k of top_k_correct; 0: top-k is not counted
  std::int64_t top_k_correct = 0; ///< samples whose label ranks among the top k logits
  /// The workers (compute indices) whose part of the phase's data went uncovered because
  /// they were lost (on_worker_loss = continue): `samples` counts the survivors' parts only.
  std::vector<std::int32_t> lost_parts{};
};

/// Everything a finished run measured, in the order the phases ran.
struct training_result {
  std::vector<phase_report> phases;
  /// The shards' weights after the last step, by parameter slot, with their names.
  std::vector<std::string> parameter_names;
  std::vector<tensor> final_weights;
  /// The placement plan the run followed (placement_plan::hash): peers compare it.
  std::uint64_t plan_hash = 0;
};

using rewind_atom = caf::atom_constant<caf::atom("rewind")>;

/// What a compute actor sends gradients to and pulls weights from: a parameter shard, an
/// aggregator in front of one, a host's gradient tap, a compressed hop, or a proxy or relay for
/// a remote one. The compiler checks that each of them offers exactly this.
///   (push_atom, gradient_push) -> weight_set   weights of the pushed keys after the update
///   (pull_atom, deadline)      -> weight_set   the current weights of every key
///   (rewind_atom, int64 step, int32 source, deadline) -> weight_set
///                                 every key's weights before `step` (-1: the earliest step
///                                 not yet summed for every group here); weight_set::before_step
///                                 says which. A compute adopted after its worker process was
///                                 lost asks, so it goes on from the step in flight. An
///                                 aggregator of a synchronous topology keeps each group's
///                                 weights one step back, so the step is recomputed from the
///                                 weights it started from. A shard keeps none: asked for -1 it
///                                 answers its current weights and the first step `source` (the
///                                 asker's gradient_push::source) has not pushed every group of
///                                 (the asker's steps race the others' there anyway: async, ssp).
///                                 A step whose weights are gone, any other step asked of a
///                                 shard, and every rewind of a compressed hop, is an
///                                 errc::bad_request naming why.
/// All carry the deadline their originator set (the push in gradient_push::due); whoever
/// passes them on waits for that deadline, not one of its own (timeouts.hpp).
using push_target_actor = caf::typed_actor<
  caf::replies_to<push_atom, gradient_push>::with<weight_set>,
  caf::replies_to<pull_atom, deadline>::with<weight_set>,
  caf::replies_to<rewind_atom, std::int64_t, std::int32_t, deadline>::with<weight_set>>;

#define TROUPE_MESSAGES_INSPECTABLE 1

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, applied_group& x) {
  return f(caf::meta::type_name("troupe.applied_group"), x.source, x.keys, x.step);
}

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, batch_report& x) {
  return f(caf::meta::type_name("troupe.batch_report"), x.rank, x.epoch, x.index, x.batches,
           x.samples, x.correct, x.loss_sum, x.learning_rate, x.top_k, x.top_k_correct,
           x.step_seconds, x.wait_seconds, x.values_pushed, x.values_sent);
}

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, phase_report& x) {
  return f(caf::meta::type_name("troupe.phase_report"), x.epoch, x.validation, x.samples, x.correct,
           x.loss_sum, x.seconds, x.step_seconds, x.skipped, x.top_k, x.top_k_correct,
           x.lost_parts);
}

/// The final weights cross as plain floats (tensor's inspect): a result crosses once per run.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, training_result& x) {
  return f(caf::meta::type_name("troupe.training_result"), x.phases, x.parameter_names,
           x.final_weights, x.plan_hash);
}

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::loader_item)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::gradient_push)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::weight_set)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::shard_snapshot)

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::replica_state)
