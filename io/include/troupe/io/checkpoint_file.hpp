// A training checkpoint as a value, and its file: one safetensors file per saved epoch,
// PREFIX-EEEE.safetensors (EEEE the epochs completed, four digits at least, as MXNet's
// PREFIX-EEEE.params), written atomically (atomic_file.hpp) and checksummed. docs/checkpoints.md
// specifies the file; in short:
//
//   tensors   "<parameter>"            the weights, by the model's parameter names
//             "<buffer>"               worker 0's buffers (batch-norm running statistics)
//             "momentum/<parameter>"   SGD's velocity, parameter-shaped; another optimizer's
//             "<state>/<parameter>"    state tensors by their names (optimizer_state_names:
//                                      exp_avg/..., exp_avg_sq/..., square_avg/..., sum/...)
//             "worker<w>/<buffer>"     worker w's buffers, w >= 1
//   metadata  troupe.format = "1", troupe.epoch, troupe.network, troupe.steps_per_epoch,
//             troupe.parameters / troupe.buffers (names, one per line), troupe.shard.<r>
//             (push counters), troupe.worker.<w>.streams (random-stream positions),
//             troupe.crc32 (CRC-32 of the whole file with these 8 hex digits read as '0');
//             optimizers other than SGD add troupe.optimizer (its name) and
//             troupe.optimizer_steps (each parameter's update count, one per line), so an SGD
//             checkpoint is what it always was and one without troupe.optimizer is SGD's
//
// Loading a checkpoint with PyTorch needs nothing but the file (scripts/load_checkpoint.py):
// names without a '/' are the model's state.
//
// Thread-safety: plain values and functions without shared state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <troupe/io/safetensors.hpp>
#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe {

/// What a parameter shard counts besides its tensors.
struct shard_counters {
  std::int64_t updates = 0;               ///< pushes applied (`step=` in the file)
  float last_learning_rate = 0;           ///< the rate of the last update (for the logs)
  std::map<int, std::int64_t> last_steps; ///< by pushing source: the step of its last push
  /// The optimizer values a change made while the run trained (troupe ctl set: the schedule's
  /// base rate, the momentum, the weight decay; `set=` in the file), which a resumed run goes on
  /// with; absent: the job's own.
  std::optional<float> base_lr, momentum, weight_decay;
};

/// What one worker's model replica holds that the shards do not.
struct replica_state {
  std::vector<named_tensor> buffers; ///< in the model's buffer order
  /// Positions of the random streams of the replica's layers (dropout: masks drawn so far),
  /// by layer name; layers at position 0 may be left out.
  std::vector<std::pair<std::string, std::uint64_t>> streams;
};

struct training_checkpoint {
  std::int64_t epoch = 0; ///< epochs completed; a resumed run starts with epoch index `epoch`
  std::string network;
  std::int64_t steps_per_epoch = 0;
  std::vector<named_tensor> parameters;           ///< by parameter slot
  optimizer_kind optimizer = optimizer_kind::sgd; ///< whose state `state` is
  /// By parameter slot: the optimizer's state tensors, each its parameter's shape, and the
  /// parameter's update count (the same for every key of it: each step updates every key).
  std::vector<optimizer_state> state;
  std::vector<shard_counters> shards;  ///< by shard index
  std::vector<replica_state> replicas; ///< by worker; every replica has the same buffers
};

/// "PREFIX-0003.safetensors" for epoch 3. Throws std::invalid_argument for an empty prefix
/// or a negative epoch.
std::string checkpoint_path(const std::string& prefix, std::int64_t epoch);

/// Writes the checkpoint to `path` atomically; a `path` named PREFIX-EEEE.safetensors first
/// displaces a cluster checkpoint's PREFIX-EEEE.manifest.json (one kind per epoch:
/// checkpoint_parts.hpp). Throws std::invalid_argument for an inconsistent value (state
/// tensors' count or shapes, replicas with different buffers), io_error for the file.
void write_checkpoint(const std::string& path, const training_checkpoint& checkpoint);

/// Reads and checks a checkpoint. Every failure is an io_error that starts with the path and
/// says what is wrong: missing, truncated, not safetensors, checksum mismatch (corrupted),
/// not a Troupe checkpoint, or inconsistent.
training_checkpoint read_checkpoint(const std::string& path);

} // namespace troupe
