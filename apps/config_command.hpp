// What `troupe check` and `troupe graph` read from their arguments: a config (first, as
// CONFIG, or as --config CONFIG, or none: the job the flags alone describe) and every flag
// `troupe train` takes, declared by the one definition train uses (train_flags.hpp), so the
// job they print is the job `troupe train` with the same arguments would run.
#pragma once

#include <string>
#include <vector>

#include "apps/train_flags.hpp"

namespace troupe {

struct check_request {
  train_command_line cli;   ///< the resolved job; cli.help: print cli.help_text
  bool push_groups = false; ///< check only: print the push groups, nothing else
  bool reference = false;   ///< check only: print the key table, read no config
};

/// Parses `args` of `command` ("check" or "graph"). Throws usage_error as parse_train_flags
/// does, naming the flag (a config's problem carries its diagnostic).
check_request parse_check_args(const std::string& command, const std::vector<std::string>& args);

} // namespace troupe
