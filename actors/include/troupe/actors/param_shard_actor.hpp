// The parameter shard actor: owns the weights of a set of keys (model parameters), applies
// the optimizer to pushed gradients, and serves the weights.
//
// Protocol: param_shard_actor = push_target_actor (troupe/actors/messages.hpp), extended by
//   (push_atom, gradient_push) -> weight_set   one optimizer step on each key the push lists (a
//   push
//                                              group: some or all of the shard's keys), then
//                                              the new weights of those keys; an unknown or
//                                              repeated key, a wrong count or shape is an
//                                              errc::bad_request naming the key, and nothing
//                                              is applied; so is a step beyond the run or
//                                              before the pusher's last (a replay)
//   (pull_atom)                -> weight_set   the current weights of every key
//   (rewind_atom, step, source, deadline) -> weight_set  (async, ssp: a compute adopted after its
//                                              process was lost, with no aggregator between)
//                                              the current weights, before_step the first
//                                              step `source` has not pushed every group of
//                                              (-1 asked), or the step asked where it is that
//                                              one or the one before and every group of the
//                                              source was applied at it; another step is an
//                                              errc::bad_request naming the source's step
//   (forget_atom, vector<int32> workers) -> ()  these workers (`worker` fields of pushes) are
//                                              gone for good (their process was lost and the
//                                              run goes on without it): they no longer count
//                                              as the slowest, held answers now within the
//                                              bound are released at once, and a later push
//                                              from one of them is an errc::bad_request
//                                              naming it
//   (snapshot_atom)            -> shard_snapshot  every key's weights and optimizer state (copies
//                                              of the state, which updates change in place)
//                                              and the counters, for a checkpoint; asked
//                                              between epochs, when no push is in flight
//   (restore_atom, shard_snapshot) -> bool     takes a snapshot's state (copies it) before
//                                              the first push; a snapshot of other keys
//                                              (count or shapes), of another optimizer's
//                                              state, or a shard that has applied a push
//                                              already is an errc::bad_request, and nothing
//                                              changes
//   (replicate_atom, gradient_push) -> int64   a backup's side of replication (shard_backups = 1):
//                                              the primary's push, applied as a push is
//                                              (same checks, same update), answered with the
//                                              count of pushes applied rather than weights
//   (backup_atom, shard_backup_actor) -> ()    from now on every applied push is first
//                                              replicated to this backup, and its pusher
//                                              answered only once the backup has it; an
//                                              invalid handle: no backup (its process was
//                                              lost, as the scheduler says), and the pushes
//                                              held for it are answered
//   (applied_atom) -> vector<applied_group>    each push group's last step applied, by source
//                                              (a promoted backup's aggregator starts from it)
//   (change_atom, shard_change) -> bool    from the change's step on, the optimizer runs with
//                                              its new value, or the staleness bound is the
//                                              new one (troupe ctl set): asked between
//                                              epochs, when no push is in flight; a step some
//                                              pusher has passed already, a momentum for a rule
//                                              without one or a value out of the key's range is
//                                              an errc::bad_request, and nothing changes
//
// A source's push of a group it has applied that step already (a request retried after its
// first target, a lost primary, had passed it on to this backup) is answered with the current
// weights of its keys and applied no second time.
//
// Replication forwards the summed gradient, not the new values: the backup runs the same
// deterministic update on it, so its weights and optimizer state stay equal to the primary's bit
// for bit, at the bytes of one gradient per step (new values with the state would be twice that or
// more).
// A replication that fails with errc::peer_down (the channel to the backup ended) holds its
// push's answer until the shard is told the backup is gone (backup_atom with none: the
// scheduler saw its process lost); a broken channel between two live servers therefore stalls
// the run rather than letting the backup fall behind a step a pusher saw. Any other failure
// of the backup fails the push.
//
// With a staleness bound (SSP) the answer to a push may be held back: the update is applied
// at once, but a worker more than `staleness` steps ahead of the slowest (of the workers not
// forgotten) waits for its weights (and gets the newest ones when released). With every
// worker forgotten nothing is held.
//
// Only a shard takes forget_atom, snapshot_atom and restore_atom, not every push target
// (aggregators and remote proxies speak push_target_actor alone), so a node keeps the shards it
// spawned at this type (node_part::own_shards) beside their push_target_actor handles.
//
// Weights leave the actor by handle. The optimizer never writes a buffer that a reader still
// holds: each key keeps a small pool of buffers and the update goes into one nobody else sees
// (tensor::unique), so in steady state two buffers per key alternate and no memory is
// allocated per step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/actors/messages.hpp>

#include <troupe/io/timeline.hpp>
#include <troupe/kernels/lr_schedule.hpp>
#include <troupe/kernels/optimizers/update_rule.hpp>
#include <troupe/kernels/tensor.hpp>

namespace troupe {

using forget_atom = caf::atom_constant<caf::atom("forget")>; // server node -> shard: lost workers
using replicate_atom = caf::atom_constant<caf::atom("replicate")>; // primary -> backup shard
using backup_atom = caf::atom_constant<caf::atom("backup")>;       // server node -> shard
using applied_atom = caf::atom_constant<caf::atom("applied")>;     // server node -> backup shard
using change_atom = caf::atom_constant<caf::atom("change")>;       // server node -> shard

/// What a primary shard replicates to (a backup shard, or its proxy on another process).
using shard_backup_actor =
  caf::typed_actor<caf::replies_to<replicate_atom, gradient_push>::with<std::int64_t>>;

/// What a shard change sets: the optimizer's schedule's base rate (its decays and warm-up go
/// on from it), momentum or weight decay (the config's optimizer.lr, .momentum, .wd), or the
/// stale-synchronous bound (-1: none), which switches an async run to SSP and back.
enum class shard_setting : std::uint8_t { lr, momentum, wd, staleness };

/// "lr", "momentum", "wd", "staleness": the key's name in its config section.
const char* to_string(shard_setting setting);

/// A change of one setting, taking effect from training step `step` on (the first step of an
/// epoch: changes are made between epochs).
struct shard_change {
  shard_setting setting = shard_setting::lr;
  double value = 0;
  std::int64_t step = 0;
};

using param_shard_actor =
  push_target_actor::extend<caf::reacts_to<forget_atom, std::vector<std::int32_t>>,
                            caf::replies_to<snapshot_atom>::with<shard_snapshot>,
                            caf::replies_to<restore_atom, shard_snapshot>::with<bool>,
                            caf::replies_to<replicate_atom, gradient_push>::with<std::int64_t>,
                            caf::reacts_to<backup_atom, shard_backup_actor>,
                            caf::replies_to<applied_atom>::with<std::vector<applied_group>>,
                            caf::replies_to<change_atom, shard_change>::with<bool>>;

struct shard_key {
  std::string name;         ///< key name, e.g. "conv1.weight" or "fc6.weight[0:1048576]"
  tensor initial;           ///< starting value (the shard takes its own copy)
  bool weight_decay = true; ///< false for biases and batch-norm scale/shift
};

struct shard_options {
  update_rule optimizer; ///< applied to every key; each key keeps its own state
  lr_schedule_options schedule;
  /// Stale-synchronous bound: a worker whose push is more than `staleness` steps ahead of the
  /// slowest worker's last push gets its answer only once the slowest catches up. -1: none.
  int staleness = -1;
  int workers = 1; ///< pushing workers (their `worker` fields are 0..workers-1) for staleness
                   ///< (forget_atom takes some of them out)
  /// Steps of the whole run (epochs x steps per epoch): a push of a later step is from the
  /// future and refused, as is one of an earlier step than its pusher's last. 0: no limit.
  std::int64_t step_limit = 0;
  /// Where each applied push is recorded as an "apply" span (step, source, keys) on the track
  /// `track` (troupe/io/timeline.hpp). Null: nowhere.
  std::shared_ptr<timeline_recorder> timeline;
  std::string track = "shard";
};

/// Throws std::invalid_argument if the schedule is invalid or `keys` is empty.
param_shard_actor spawn_param_shard(caf::actor_system& system, std::vector<shard_key> keys,
                                    shard_options options);

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::shard_change)
