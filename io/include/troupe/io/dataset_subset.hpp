// A part of a dataset held in memory: the examples of some classes only, the first N of them,
// and a class count of the caller's choice, for fine-tuning and quick runs on a real dataset
// (`troupe train --classes 0-4 --num-examples 1000 --num-classes 10`).
//
// The choice is deterministic and keeps the file's order: the class filter keeps every example
// whose label is listed, then `first` keeps the first N of those. Labels keep their original
// indices (a subset of classes 5-9 still says 7 for a sneaker), so a model trained on a subset
// has outputs for every class it may later be fine-tuned on; `classes` only says how many
// outputs that is, at least the largest label kept + 1.
//
// Thread-safety: plain functions; the subset is a new immutable dataset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <troupe/io/dataset.hpp>

namespace troupe {

/// "0-4" -> {0, 1, 2, 3, 4}; "0,2,7" -> {0, 2, 7}; ranges and single classes may be mixed
/// ("0-2,5"). The result is sorted without repeats. Throws std::invalid_argument saying what
/// is wrong with the text (empty, not a number, a range that runs backwards, a repeat).
std::vector<int> parse_class_list(const std::string& text);

/// "0-4", "0,2,7", "0-2,5": the shortest text parse_class_list reads back as `classes`.
std::string class_list_text(const std::vector<int>& classes);

/// The subset of `full` that `options` asks for. Throws io_error naming the dataset for a class
/// outside [0, full->classes()), a subset with no example, `first` beyond the examples the filter
/// leaves, a class count below a kept label + 1, or a streamed dataset (RecordIO), whose images
/// are not held in memory. Returns `full` itself when nothing is asked.
std::shared_ptr<const dataset> take_subset(std::shared_ptr<const dataset> full,
                                           const subset_options& options);

} // namespace troupe
