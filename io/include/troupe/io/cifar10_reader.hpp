// Reader for the CIFAR-10 binary version: data_batch_1..5.bin (train) and test_batch.bin.
// Each record is 1 label byte (0..9) followed by 3072 pixel bytes (R, G, B planes of 32x32),
// 10000 records per file. A file whose size is not a multiple of 3073, or a label > 9, is an
// error naming the file and the record.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <troupe/io/dataset.hpp>

namespace troupe {

std::shared_ptr<const dataset> load_cifar10_files(const std::vector<std::string>& paths,
                                                  const std::string& description);
/// Looks in dir and in dir/cifar-10-batches-bin.
std::shared_ptr<const dataset> load_cifar10_dir(const std::string& dir, split which);

} // namespace troupe
