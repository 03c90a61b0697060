// A dataset is an indexable set of labelled images held in memory as bytes (0..255, CHW).
//
// MNIST-like sets and CIFAR-10 are small enough to load whole (Fashion-MNIST: 47 MB, CIFAR-10:
// 180 MB), so readers parse and validate the files once and batches are cut from memory.
// Every reader failure is an `io_error` whose message names the file and what is wrong
// (missing, truncated, bad magic, label out of range); nothing is read short silently.
//
// Thread-safety: a loaded dataset is immutable; any number of threads may read it.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

/// A data or file error; what() starts with the file path when there is one.
class io_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class dataset {
public:
  dataset(std::string description, shape_t sample_shape, int classes,
          std::vector<std::uint8_t> pixels, std::vector<std::int32_t> labels);

  std::int64_t size() const { return static_cast<std::int64_t>(labels_.size()); }
  /// One example's shape, C x H x W.
  const shape_t& sample_shape() const { return sample_shape_; }
  std::int64_t sample_numel() const { return sample_numel_; }
  int classes() const { return classes_; }
  /// Where it came from, e.g. "fashion-mnist train (/usr/share/datasets/fashion-mnist)".
  const std::string& description() const { return description_; }

  /// Pixels of example i (sample_numel bytes, CHW). No bounds check beyond debug asserts.
  const std::uint8_t* pixels(std::int64_t i) const {
    return pixels_.data() + i * sample_numel_;
  }
  std::int32_t label(std::int64_t i) const { return labels_[static_cast<std::size_t>(i)]; }

private:
  std::string description_;
  shape_t sample_shape_;
  std::int64_t sample_numel_;
  int classes_;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::int32_t> labels_;
};

enum class split { train, test };

struct dataset_options {
  std::string name = "fashion-mnist";  ///< fashion-mnist | mnist | cifar10 | synthetic
  std::string dir = "/usr/share/datasets/fashion-mnist";
  split which = split::train;
  /// synthetic only: example shape, classes and count (train) / count / 6 (test).
  shape_t synthetic_shape{1, 28, 28};
  int synthetic_classes = 10;
  std::int64_t synthetic_size = 60000;
  std::uint64_t synthetic_seed = 0;
};

/// Fields in declaration order, for CAF's serializers and graph's value_hash (no CAF here).
/// `split` needs no overload: CAF 0.17 and value_hash write an enum as its underlying integer.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dataset_options& x) {
  return f(x.name, x.dir, x.which, x.synthetic_shape, x.synthetic_classes, x.synthetic_size,
           x.synthetic_seed);
}

/// Opens a dataset by name; throws io_error (file problems) or std::invalid_argument (unknown
/// name) with a message that names what and where.
std::shared_ptr<const dataset> open_dataset(const dataset_options& options);
/// Names accepted by open_dataset.
std::vector<std::string> dataset_names();

} // namespace troupe
