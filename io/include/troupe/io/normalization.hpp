// Standard per-channel mean and standard deviation of the image datasets Troupe reads, for
// augment_options::mean / stdev.
//
// The figures are the published statistics of each training set's pixels scaled to [0, 1]
// (the values torchvision examples use), so a model trained here sees the same input scale as
// reference recipes and results compare like for like.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace troupe {

/// {mean, stdev} per channel for "fashion-mnist", "mnist", "cifar10" or "imagenet"; throws
/// std::invalid_argument listing those names for any other name.
std::pair<std::vector<float>, std::vector<float>>
standard_normalization(const std::string& dataset_name);

} // namespace troupe
