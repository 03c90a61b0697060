// Typed overrides (config_overrides, job_config.hpp) onto a config whose statements have been
// read: the seam where `troupe train`'s flags enter the language without becoming text. Kept
// apart from job_config.cpp, which reads text, so each file has one input.
//
// Thread-safety: plain functions.
#pragma once

#include <string>
#include <vector>

#include <troupe/graph/config/job_config.hpp>

namespace troupe {

/// The calls a data statement may make: fashion_mnist, mnist, cifar10, synthetic, recordio.
extern const std::vector<std::string> data_statement_calls;

/// Which data statements the overrides gave (each replaces the one the text wrote).
struct overridden_data {
  bool train = false;
  bool validation = false;
};

/// Applies `o` to `c` as the text's statements would be: the data statements, then the compute
/// count (given, or asked of default_workers). Call after the text's statements are read and
/// before the defaults derived from them. Throws config_error naming the value by o.name_of.
overridden_data apply_overrides(job_config& c, const config_overrides& o);

} // namespace troupe
