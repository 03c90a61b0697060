// Turns `troupe train` flags into typed training options, with MXNet train_*.py spellings
// (--network --num-layers --dataset --data-dir --batch-size --lr --lr-step-epochs --lr-factor
// --mom --wd --num-epochs --seed --threads --metrics --disp-batches) plus Troupe's own.
//
// Defaults that depend on other flags are resolved here, visibly: the learning rate depends
// on the network, the data directory and augmentation on the dataset, and the multi-step
// boundaries (when not given) sit at 50% and 75% of --num-epochs.
#pragma once

#include <string>
#include <vector>

#include <troupe/actors/training_session.hpp>

namespace troupe {

struct train_command_line {
  training_job job;
  session_output output;
  int threads = 2;
  bool help = false;
  std::string help_text;
};

/// Throws usage_error naming the flag for anything it cannot accept.
train_command_line parse_train_flags(const std::vector<std::string>& args);

/// Learning rate a network trains well with at batch 128 when --lr is not given.
float default_learning_rate(const std::string& network);
/// Where a dataset lives when --data-dir is not given ("" when there is no standard place).
std::string default_data_dir(const std::string& dataset);

} // namespace troupe
