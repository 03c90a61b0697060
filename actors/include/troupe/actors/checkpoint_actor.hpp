// The checkpoint actor: writes a run's state to PREFIX-EEEE.safetensors when the coordinator
// asks at an epoch boundary, and puts a loaded checkpoint back into the shards and compute
// actors before the first epoch of a resumed run (docs/checkpoints.md).
//
// Protocol: checkpoint_actor
//   (save_atom, int64 epochs_done) -> string   asks every shard and every compute actor for a
//                                              snapshot (snapshot_atom), joins the shards'
//                                              keys into parameter-shaped weights and momentum,
//                                              writes checkpoint_path(prefix, epochs_done)
//                                              atomically, logs "checkpoint: saved PATH" and
//                                              answers with that path
//   (restore_atom)                 -> bool     sends each shard its keys' part of the loaded
//                                              checkpoint and each compute actor its worker's
//                                              replica state (restore_atom); answers once all
//                                              have taken it
// The first failure (a refused snapshot or restore, a request past the `timeout`, a file that
// cannot be written) is the answer, as a troupe errc with the text. It runs detached: writing
// and fsyncing a file takes its own thread, never a scheduler thread.
//
// The coordinator sends (save) only between epochs, when no step is in flight, so every
// snapshot belongs to the same moment; (restore) before the first epoch, before any pull.
//
// The actor is not part of the placement plan: it exists only in a run with checkpoints, in
// one process, beside the coordinator (node_part.hpp); a cluster run's checkpoints are
// checkpoint_part_actor.hpp's.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/graph/model.hpp>
#include <troupe/io/checkpoint_file.hpp>
#include <troupe/io/timeline.hpp>

namespace troupe {

using checkpoint_actor =
  caf::typed_actor<caf::replies_to<save_atom, std::int64_t>::with<std::string>,
                   caf::replies_to<restore_atom>::with<bool>>;

/// One shard and the keys it owns, in its key order.
struct checkpoint_shard {
  param_shard_actor shard;
  std::vector<key_slice> keys;
};

struct checkpoint_wiring {
  std::string prefix; ///< saves go to checkpoint_path(prefix, epoch); empty: (save) is refused
  std::vector<checkpoint_shard> shards;      ///< by shard index
  std::vector<local_compute_actor> replicas; ///< by worker
  std::vector<std::string> parameter_names;  ///< by parameter slot
  std::vector<shape_t> parameter_shapes;
  std::string network;
  std::int64_t steps_per_epoch = 0;
  optimizer_kind optimizer = optimizer_kind::sgd; ///< the shards' (whose state they snapshot)
  /// What (restore) installs, checked with check_resumable; null: (restore) is refused.
  std::shared_ptr<const training_checkpoint> resume;
  caf::timespan timeout = std::chrono::seconds(60); ///< per snapshot or restore request
  /// Where "checkpoint: saved PATH" goes after each save; unset: standard error, as a cluster
  /// run's manifest says it.
  std::function<void(const std::string&)> log;
  /// Where each save is recorded (track "checkpoint": the save, and the file's write inside
  /// it); null: nowhere.
  std::shared_ptr<timeline_recorder> timeline;
};

/// Throws std::invalid_argument for no shard or no replica, or parameter names and shapes of
/// different counts.
checkpoint_actor spawn_checkpoint(caf::actor_system& system, checkpoint_wiring wiring);

/// The share of `checkpoint` that a shard owning `keys` (in its key order) restores: each key
/// cut from the whole parameters and optimizer state, whatever key plan saved them, and the
/// counters of shard `index` of a run of `shards` (resumed_counters; `file` names the checkpoint in
/// its refusal). Used by the one-process checkpoint actor and by each cluster node's part.
shard_snapshot snapshot_for(const training_checkpoint& checkpoint,
                            const std::vector<key_slice>& keys, std::size_t index,
                            std::size_t shards, const std::string& file);

/// Checks that `checkpoint` (read from `path`) holds `reference`'s parameters (names and
/// shapes, slot by slot) and buffers. Throws io_error starting with `path` and naming the
/// first difference.
void check_checkpoint_model(const training_checkpoint& checkpoint, const std::string& path,
                            model& reference);

/// check_checkpoint_model, and that the run about to resume from it has the same number of
/// workers, the same steps per epoch and the same optimizer (io_error as above). Another number of
/// shards is allowed (the keys are re-sharded) when the saved shards' counters allow it
/// (resumed_counters, checkpoint_parts.hpp).
void check_resumable(const training_checkpoint& checkpoint, const std::string& path,
                     model& reference, int workers, std::size_t shards,
                     std::int64_t steps_per_epoch, optimizer_kind optimizer);

} // namespace troupe
