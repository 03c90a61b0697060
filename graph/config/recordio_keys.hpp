// The per-channel statistics of a `recordio(...)` data statement (docs/dsl.md, docs/data.md),
// checked alike where the config writes them and where a flag gives them.
//
// Thread-safety: plain functions.
#pragma once

#include <string>
#include <vector>

namespace troupe {

/// Per-channel pixel statistics (`key` "rgb_mean" or "rgb_std"), checked against the one range
/// of data.<key> (key_table.hpp): "" when they are fine, else why not, naming them `name`
/// ("rgb_std" in a config, "--rgb-std" for a flag). `bad` gets the offending element's index,
/// or the count when the count is wrong.
std::string rgb_problem(const std::vector<double>& values, const std::string& key,
                        const std::string& name, std::size_t& bad);

} // namespace troupe
