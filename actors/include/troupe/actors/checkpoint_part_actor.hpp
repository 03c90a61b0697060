// A cluster run's checkpoint is written in parts (troupe/io/checkpoint_parts.hpp): every server
// and worker process saves what its own actors hold, in parallel, and the scheduler writes the
// manifest naming the parts last, so no model is funnelled through one process. Two actors:
//
// Protocol: checkpoint_part_actor (one per server and worker process, over its own shards
// and compute actors; the scheduler reaches it through a proxy on the node's channel)
//   (save_atom, int64 epoch, string path, deadline)    -> part_record
//          asks each of the node's shards and compute actors for a snapshot (snapshot_atom),
//          writes them as one part to `path` atomically and answers with the part's record
//   (restore_atom, int64 epoch, string prefix, deadline) -> bool
//          reads the checkpoint of `epoch` under `prefix` (either kind: a one-process file or
//          a manifest and its parts), checks that it fits this node's part of the plan, and
//          sends each shard its keys' share (re-sharded when the checkpoint was saved by
//          another number of shards: resumed_counters) and each compute its worker's replica
//          state; answers once all have taken it
//
// Protocol: the manifest checkpoint, a checkpoint_actor (checkpoint_actor.hpp) beside the
// coordinator of a cluster run
//   (save_atom, int64 epochs_done) -> string   asks every part for its save (files
//          PREFIX-EEEE.<node>.safetensors), then writes PREFIX-EEEE.manifest.json naming them
//          with their sizes and checksums, and answers with the manifest's path; logs
//          `checkpoint: saving epoch E (N parts)` before and `checkpoint: saved PATH` after
//   (restore_atom)                 -> bool     asks every part to restore the checkpoint the
//          run resumes from (checked by the session before anything was spawned); logs
//          `checkpoint: restoring epoch E (N parts)` before and `checkpoint: restored epoch E`
//
// The first failure (a refused snapshot or restore, a lost node, a request past its deadline,
// a file that cannot be written) is the answer, naming the node. Both run detached: reading,
// writing and fsyncing files takes their own threads, never a scheduler thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/actors/checkpoint_actor.hpp>
#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/deadline.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/io/checkpoint_parts.hpp>
#include <troupe/io/node_events.hpp>

namespace troupe {

using checkpoint_part_actor = caf::typed_actor<
  caf::replies_to<save_atom, std::int64_t, std::string, deadline>::with<part_record>,
  caf::replies_to<restore_atom, std::int64_t, std::string, deadline>::with<bool>>;

/// One of the node's shards: its index in the plan's key plan and its keys in key order.
struct part_shard {
  std::size_t index = 0;
  param_shard_actor shard;
  std::vector<key_slice> keys;
};

struct checkpoint_part_wiring {
  std::vector<part_shard> shards;                            ///< the node's own shards
  std::vector<std::pair<int, local_compute_actor>> replicas; ///< (worker, compute) of the node
  /// The run's model and shape, which a checkpoint to restore must fit.
  std::vector<std::string> parameter_names; ///< by slot
  std::vector<shape_t> parameter_shapes;    ///< by slot
  std::size_t run_shards = 0;               ///< shards in the run's key plan
  int run_workers = 0;
  std::int64_t steps_per_epoch = 0;
  /// Where each save is recorded (troupe/io/timeline.hpp), on the track "checkpoint": `save`
  /// from the request to the part written, with its `write` inside (args.detail: the file).
  /// Null: nowhere.
  std::shared_ptr<timeline_recorder> timeline;
};

/// Detached: on a thread of its own, so its file writes never hold up the shared scheduler;
/// `detached = false` spawns it scheduled, as a test under CAF's deterministic coordinator
/// needs (an actor on a thread of its own races that coordinator).
/// Throws std::invalid_argument for a part with neither shards nor replicas, or parameter
/// names and shapes of different counts.
checkpoint_part_actor spawn_checkpoint_part(caf::actor_system& system,
                                            checkpoint_part_wiring wiring, bool detached = true);

/// One node's part, as the manifest checkpoint reaches it.
struct manifest_part {
  std::string node; ///< its plan name ("server_0"), which names its file
  checkpoint_part_actor part;
};

struct manifest_checkpoint_wiring {
  std::string prefix; ///< saves go under it; empty: (save) is refused
  std::vector<manifest_part> parts;
  checkpoint_header header;       ///< the run's; each save sets the epoch
  std::int64_t resume_epoch = -1; ///< the checkpoint (restore) puts back; -1: (restore) is refused
  caf::timespan timeout = std::chrono::seconds(60); ///< per part's save or restore
  /// Where its progress lines go (`checkpoint: saving epoch E ...` before any part is asked,
  /// `checkpoint: saved MANIFEST` once the manifest is written, the same for restores), so an
  /// operator, or a chaos trial, sees a save in progress; empty: standard error, one write each.
  std::function<void(const std::string&)> log;
  /// Records beside those lines: `saving` (epoch, parts), `saved` (epoch, manifest),
  /// `restoring` and `restored` (epoch). Null: none.
  std::shared_ptr<node_events> events;
  /// Where each save is recorded, on the track "checkpoint": `save` from asking the parts to
  /// the manifest written, with the manifest's `write` inside. Null: nowhere.
  std::shared_ptr<timeline_recorder> timeline;
};

/// A checkpoint_actor for a run whose shards and computes live in other processes. Throws
/// std::invalid_argument for no part or a part without a name.
checkpoint_actor spawn_manifest_checkpoint(caf::actor_system& system,
                                           manifest_checkpoint_wiring wiring);

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::part_record)
