// Maps a checked config (graph/config/job_config.hpp) onto the session's training_options.
// Lives in apps/ because graph/ must not see actor types. Defaults that depend on the network
// or dataset come from the same helpers `troupe train` flags use, so a config and the
// equivalent flags train the same job.
#pragma once

#include <string>

#include <troupe/actors/training_session.hpp>
#include <troupe/graph/config/job_config.hpp>

namespace troupe {

/// Fills the defaults that depend on the network or dataset (lr, data dirs) into `config`
/// with the same helpers the train flags use, so `troupe check` prints what will run.
void resolve_app_defaults(job_config& config);

/// Throws config_error (e.g. cifar10 without a dir) with the position in the config.
training_job to_training_job(const job_config& config);
/// The config's output settings (display, metrics file).
session_output session_output_of(const job_config& config);

} // namespace troupe
