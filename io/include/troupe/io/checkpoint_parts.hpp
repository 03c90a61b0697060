// A cluster run's checkpoint: one safetensors file per node (a part) and a manifest naming
// them, so every server writes its own shards' keys and every worker its replicas' state in
// parallel and no model is funnelled through one process. docs/checkpoints.md specifies the
// files; in short:
//
//   PREFIX-EEEE.<node>.safetensors   a part: "<param>@<offset>" and the optimizer's state
//                                    "<state>/<param>@<offset>" per shard key (SGD's
//                                    "momentum/...", Adam's "exp_avg/..." and "exp_avg_sq/...",
//                                    ...), "worker<w>/<buffer>" per replica buffer; metadata
//                                    with the epoch, the run's identity, what the part holds
//                                    (shards, keys, counters, optimizer and update counts,
//                                    workers, streams) and its own CRC-32, so a part read
//                                    alone is checked too
//   PREFIX-EEEE.manifest.json        written LAST: the run (epoch, network, parameters,
//                                    workers, shards) and each part's file, size and sha256
//
// An epoch has exactly one kind of checkpoint: writing a manifest removes that epoch's
// one-process file first, and writing a one-process file removes that epoch's manifest; if
// both are found anyway, reading refuses naming both. Every optimizer's state is saved, so a
// resumed cluster run goes on as the one-process file's would. The files are assumed on a file
// system that every node sees (one host, or a shared one such as NFS).
//
// Thread-safety: plain values and functions without shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <troupe/io/checkpoint_file.hpp>

namespace troupe {

/// One key's slice of a parameter, as a shard holds it (key_slice:
/// graph/config/key_assignment.hpp).
struct key_part {
  std::size_t slot = 0;    ///< the parameter's slot in the model
  std::int64_t offset = 0; ///< first element, in the parameter's flat order
  tensor weights; ///< the key's values (flat of `length`, or the parameter's shape when whole)
  /// The optimizer's state tensors of this key (optimizer_state_names order, each shaped as
  /// `weights`) and its update count (SGD's is not saved: SGD does not read it).
  optimizer_state state;
};

/// One shard's state: its index in the saving run's key plan, its counters, its optimizer,
/// its keys in key order.
struct shard_part {
  std::size_t index = 0;
  shard_counters counters;
  optimizer_kind optimizer = optimizer_kind::sgd; ///< whose state the keys hold
  std::vector<key_part> keys;
};

/// What one node of a cluster run saves: its shards (a server) and/or its replicas (a worker).
struct checkpoint_part {
  std::vector<shard_part> shards;
  std::vector<std::pair<int, replica_state>> replicas; ///< (worker index, its state)
};

/// What the manifest records of one part written.
struct part_record {
  std::string file; ///< file name, relative to the manifest's directory
  std::uint64_t bytes = 0;
  std::string checksum; ///< "sha256:<64 lowercase hex digits>" of the whole file
};

/// What the manifest says of the run besides its parts.
struct checkpoint_header {
  std::int64_t epoch = 0;
  std::string network;
  std::int64_t steps_per_epoch = 0;
  std::vector<std::string> parameter_names; ///< by slot
  std::vector<shape_t> parameter_shapes;    ///< by slot
  int workers = 0;                          ///< replicas in the run
  std::size_t shards = 0;                   ///< shards in the run's key plan
};

/// "PREFIX-0003.manifest.json" for epoch 3. Throws std::invalid_argument for an empty prefix
/// or a negative epoch.
std::string checkpoint_manifest_path(const std::string& prefix, std::int64_t epoch);

/// "PREFIX-0003.<node>.safetensors" (node e.g. "server_0", "worker_1"). Throws
/// std::invalid_argument for an empty prefix, a negative epoch, or a node name that is empty
/// or holds anything but letters, digits, '_' and '-'.
std::string checkpoint_part_path(const std::string& prefix, std::int64_t epoch,
                                 const std::string& node);

/// Writes one part atomically (tmp, fsync, rename, fsync dir: io/atomic_file) and returns its
/// record (file name without directory, size, sha256). Throws std::invalid_argument for an
/// inconsistent part (nothing in it, a shard or worker given twice, state tensors of another
/// count than the optimizer keeps or shaped unlike their weights), io_error for the file.
part_record write_checkpoint_part(const std::string& path, std::int64_t epoch,
                                  const checkpoint_part& part);

/// Writes the manifest atomically, LAST (after every part), after removing the one-process
/// file of the same epoch. Throws std::invalid_argument for an inconsistent header/parts (no
/// parts, duplicate files, names and shapes of different counts), io_error for the file.
void write_checkpoint_manifest(const std::string& prefix, const checkpoint_header& header,
                               const std::vector<part_record>& parts);

/// Reads the checkpoint of `epoch` under `prefix`, whichever kind exists: the one-process file
/// PREFIX-EEEE.safetensors (read_checkpoint) or a manifest and its parts, assembled into one
/// training_checkpoint (whole parameters and optimizer state from the key slices; replicas by
/// worker; shard counters by index). Every problem is an io_error naming the FILE at fault
/// (manifest or part) and what is wrong, before anything trains: missing part, truncated/corrupt
/// part, a part whose size or checksum differs from the manifest's record, a part of another
/// epoch/run, keys that overlap or leave elements uncovered, a worker or shard missing or given
/// twice, a malformed manifest (strict JSON: io/strict_json.hpp), unknown format version; shards of
/// different optimizers, keys of one parameter with different update counts; both kinds present;
/// none.
training_checkpoint read_any_checkpoint(const std::string& prefix, std::int64_t epoch);

/// The manifest's path when PREFIX-EEEE.manifest.json exists, else checkpoint_path(prefix,
/// epoch): the file to name in messages about the checkpoint of `epoch`.
std::string existing_checkpoint_path(const std::string& prefix, std::int64_t epoch);

/// Reads a manifest given by its path (what read_any_checkpoint does once it found one), for
/// tools handed the file itself.
training_checkpoint read_checkpoint_manifest(const std::string& manifest_path);

/// The counters shard `index` of a run with `shards` shards resumes with. Same shard count as the
/// checkpoint: by index. Another count (keys re-sharded): every saved shard's counters must be
/// equal (true in bsp/hierarchical: each shard applies one update per step) and are taken as they
/// are; else io_error naming `path` ("its shards' counters differ (async/ssp): resume with S
/// shards").
shard_counters resumed_counters(const training_checkpoint& checkpoint, std::size_t index,
                                std::size_t shards, const std::string& path);

} // namespace troupe
