// Reader for the idx format of MNIST and Fashion-MNIST, plain or gzip-compressed.
//
// An idx file is a big-endian header (magic 0x0000TTRR: type TT = 0x08 unsigned byte, rank RR;
// then RR uint32 extents) followed by the values. Images are rank 3 (N x 28 x 28), labels
// rank 1 (N). The reader checks the magic, the type, the rank, that the payload is exactly as
// long as the extents say, that both files agree on N, and that labels are < classes.
#pragma once

#include <memory>
#include <string>

#include <troupe/io/dataset.hpp>

namespace troupe {

/// Loads an image file and a label file (either may end in .gz) into a dataset.
std::shared_ptr<const dataset> load_idx(const std::string& images_path,
                                        const std::string& labels_path, int classes,
                                        const std::string& description);

/// MNIST / Fashion-MNIST directory layout: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
/// Prefers the .gz file when both exist; names the missing file when neither does.
std::shared_ptr<const dataset> load_mnist_dir(const std::string& dir, split which,
                                              const std::string& name);

} // namespace troupe
