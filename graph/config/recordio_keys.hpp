// The keys of a `recordio(...)` data statement (docs/dsl.md, docs/data.md): its file, index,
// image shape and the random-resized-crop, normalization and bad-record settings. Kept apart
// from job_config.cpp's other sections because only this dataset has them.
//
// Thread-safety: plain functions.
#pragma once

#include <string>
#include <vector>

#include <troupe/graph/config/job_config.hpp>
#include "graph/config/value_reader.hpp"

namespace troupe {

/// Keys a recordio statement accepts beyond batch, mirror, normalize and shuffle.
extern const std::vector<std::string> recordio_keys;

/// Reads them into `d` (a recordio statement); throws config_error at the offending value.
/// Sets the shape to [3, 224, 224] unless given.
void read_recordio_keys(const value_reader& r, const keyed_values& k, data_config& d);

} // namespace troupe
