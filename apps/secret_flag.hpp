// The cluster secret a `troupe node` or `troupe ctl` is admitted with: from --secret-file
// (`-`: one line of standard input) or TROUPE_SECRET, never from argv.
#pragma once

#include <string>

#include <troupe/cluster/admission.hpp>

#include "apps/node_identity.hpp"

namespace troupe {

/// The secret `file` holds (mode 600; "-": standard input's first line), else TROUPE_SECRET's;
/// usage_error when neither gives one (there is no unauthenticated mode).
cluster_secret read_secret(const std::string& file, const environment& env);

} // namespace troupe
