// Where `troupe launch --max-restarts N` restarts a failed job from: the newest checkpoint
// under the run's --model-prefix (either kind, docs/checkpoints.md), resumed with
// --load-epoch, as torchrun restarts every worker from the last checkpoint the job saved.
// The prefix must be on launch's command line (the nodes' arguments): a config's
// train.model_prefix alone is not read here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe::launch {

/// The value of --model-prefix among the nodes' arguments (`--model-prefix P` or
/// `--model-prefix=P`, the last one given), or nothing.
std::optional<std::string> model_prefix_of(const std::vector<std::string>& node_args);

/// A saved epoch: the epochs done and the file a resume reads (a manifest or a one-process file).
struct saved_epoch {
  std::int64_t epoch = 0;
  std::string file;
};

/// The newest checkpoint saved under `prefix`: the highest EEEE with PREFIX-EEEE.safetensors
/// or PREFIX-EEEE.manifest.json (a manifest is written after its parts, so one found names a
/// whole checkpoint). Nothing when none is there or the folder does not exist.
std::optional<saved_epoch> newest_checkpoint(const std::string& prefix);

/// `node_args` resuming from `epoch`: any --load-epoch given is replaced.
std::vector<std::string> resuming_from(const std::vector<std::string>& node_args,
                                       std::int64_t epoch);

} // namespace troupe::launch
