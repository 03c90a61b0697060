// The keys of a `recordio(...)` data statement (docs/dsl.md, docs/data.md): its file, index,
// image shape and the random-resized-crop, normalization and bad-record settings. Kept apart
// from job_config.cpp's other sections because only this dataset has them.
//
// Thread-safety: plain functions.
#pragma once

#include <string>
#include <vector>

#include "graph/config/value_reader.hpp"
#include <troupe/graph/config/job_config.hpp>

namespace troupe {

/// Keys a recordio statement accepts beyond batch, mirror, normalize and shuffle.
extern const std::vector<std::string> recordio_keys;

/// Reads them into `d` (a recordio statement); throws config_error at the offending value.
/// Sets the shape to [3, 224, 224] unless given.
void read_recordio_keys(const value_reader& r, const keyed_values& k, data_config& d);

/// Per-channel pixel statistics (`key` "rgb_mean" or "rgb_std"), checked against the one range
/// of data.<key> (key_ranges.hpp): "" when they are fine, else why not, naming them `name`
/// ("rgb_std" in a config, "--rgb-std" for a flag). `bad` gets the offending element's index,
/// or the count when the count is wrong.
std::string rgb_problem(const std::vector<double>& values, const std::string& key,
                        const std::string& name, std::size_t& bad);

} // namespace troupe
