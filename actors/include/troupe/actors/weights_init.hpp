// Fine-tuning's starting point: the weights of a saved checkpoint put into a model that may
// differ from the one that saved them in its last layers, while the run itself starts afresh
// (epoch 0, zero momentum, new counters). docs/checkpoints.md, "Fine-tuning".
//
// A checkpoint holds whole parameters by name whatever run saved it (any number of computes,
// shards or servers, one process or a cluster's parts), so the weights alone fit a run of any
// shape. The parameters named by a reset prefix keep the initializer's values instead: the
// reference model is built from the job's seed, so they are exactly what a run from scratch
// would start with.
//
// Thread-safety: plain functions; `reference` is read, as `model` allows one user at a time.
#pragma once

#include <string>
#include <vector>

#include <troupe/graph/model.hpp>
#include <troupe/io/checkpoint_file.hpp>

namespace troupe {

/// A checkpoint to start from, and the file that names it in messages (the one-process file
/// or a cluster run's manifest).
struct init_source {
  std::string file;
  training_checkpoint checkpoint;
};

/// Reads what `spec` names: "PREFIX-EPOCH" (MXNet's prefix and epoch: runs/lenet-3 reads
/// runs/lenet-0003.safetensors or runs/lenet-0003.manifest.json, whichever exists), or a path
/// ending in .safetensors or .manifest.json. Throws std::invalid_argument for a spec that is
/// none of these, io_error naming the file for one that is missing or not a checkpoint.
init_source read_init_source(const std::string& spec);

/// The names of `reference`'s parameters that start with one of `prefixes`, in slot order.
/// Throws std::invalid_argument for a prefix that matches no parameter, listing the model's
/// layers (the parameter names without their last part: conv1, conv2, fc1, fc2).
std::vector<std::string> reset_parameters(model& reference,
                                          const std::vector<std::string>& prefixes);

/// The weights a run starts from, by `reference`'s parameter slots: the checkpoint's tensor of
/// each parameter's name, or for the parameters `prefixes` reset (reset_parameters) the
/// reference's own. Throws io_error starting with source.file for a parameter it lacks, a shape
/// that differs (naming both shapes and suggesting --reset-layers), or a tensor of the
/// checkpoint the model has no parameter for (another network) unless reset would cover it;
/// std::invalid_argument as reset_parameters.
std::vector<tensor> weights_from(const init_source& source, model& reference,
                                 const std::vector<std::string>& prefixes);

/// The log line of a run that starts so: "Initializing from FILE (lenet after epoch 3, 2
/// compute(s)): 6 of 8 parameters from it, training from epoch 0; from the initializer:
/// fc2.weight, fc2.bias". Throws as reset_parameters.
std::string init_line(const init_source& source, model& reference,
                      const std::vector<std::string>& prefixes);

/// Where a fine-tuning run's shards start: weights_from and the init_line of what `spec`
/// names (the job's init_from) with `prefixes` reset. `loaded`: that checkpoint, when the
/// caller read it already (a cluster's scheduler reads it before any node joins); null: read
/// here. Throws as read_init_source and weights_from.
struct fine_tuning_start {
  std::vector<tensor> weights; ///< by `reference`'s parameter slots
  std::string line;            ///< init_line
};
fine_tuning_start fine_tuning_start_of(const std::string& spec, model& reference,
                                       const std::vector<std::string>& prefixes,
                                       const init_source* loaded = nullptr);

} // namespace troupe
