// Maps a checked config (graph/config/job_config.hpp) onto the session's training_job. Lives
// in apps/ because graph/ must not see actor types. It is the only way a job is made:
// `troupe train` writes its flags onto a job_config first (train_flags.cpp), `troupe check`
// converts the file as it is, so a config and the equivalent flags train the same job.
#pragma once

#include <string>

#include <troupe/actors/training_session.hpp>
#include <troupe/graph/config/job_config.hpp>

namespace troupe {

/// Learning rate a network (zoo name) trains well with at batch 128 when none is given.
float default_learning_rate(const std::string& network);
/// Where a dataset (io name) lives when no directory is given ("" when there is no standard
/// place).
std::string default_data_dir(const std::string& dataset);

/// Fills the defaults that depend on the network or dataset (lr, data dirs) into `config`'s
/// values (still marked not given), so `troupe check` prints what will run.
void resolve_app_defaults(job_config& config);

/// Throws config_error (e.g. cifar10 without a dir) with the position in the config.
training_job to_training_job(const job_config& config);
/// The config's output settings (display, metrics file, checkpoints); throws config_error for
/// load_epoch without model_prefix.
session_output session_output_of(const job_config& config);

} // namespace troupe
