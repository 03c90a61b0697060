// The names of a dataset's classes, from the dataset's own labels, for reports that list
// classes (`troupe eval --per-class`):
//
//   fashion-mnist  T-shirt/top, Trouser, Pullover, Dress, Coat, Sandal, Shirt, Sneaker, Bag,
//                  Ankle boot (the dataset's published labels)
//   mnist          the digits 0 .. 9
//   cifar10        batches.meta.txt of the data directory (or its cifar-10-batches-bin),
//                  one name a line, as the binary version ships it; without that file the
//                  dataset's published names (airplane ... truck)
//   recordio       the class folders im2rec listed, from PREFIX.lst beside PREFIX.rec when
//                  every label there has one folder; else the class numbers
//   synthetic      the class numbers
//
// Thread-safety: a pure function of the files it reads.
#pragma once

#include <string>
#include <vector>

#include <troupe/io/dataset.hpp>

namespace troupe {

/// `classes` names, one per class label, for the dataset `options` open. A class without a
/// name is named by its number. Throws io_error naming the file for a batches.meta.txt with
/// fewer names than classes, or a .lst that does not read (image_list.hpp).
std::vector<std::string> class_names(const dataset_options& options, int classes);

} // namespace troupe
