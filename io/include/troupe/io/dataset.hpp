// A dataset is an indexable set of labelled images: held in memory as bytes (0..255, CHW),
// or streamed from image records decoded batch by batch.
//
// MNIST-like sets and CIFAR-10 are small enough to load whole (Fashion-MNIST: 47 MB, CIFAR-10:
// 180 MB), so readers parse and validate the files once and batches are cut from memory.
// ImageNet-style RecordIO sets are not (ImageNet decoded: ~700 GB), so their dataset holds
// only the record offsets (`records()`); batch_source reads and decodes per batch, and
// pixels()/label() are not available for them.
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

class image_records;

class dataset {
public:
  dataset(std::string description, shape_t sample_shape, int classes,
          std::vector<std::uint8_t> pixels, std::vector<std::int32_t> labels);
  /// A streamed dataset: `records` decode to images that batches resample to `sample_shape`.
  dataset(std::string description, shape_t sample_shape, int classes,
          std::shared_ptr<const image_records> records);

  std::int64_t size() const { return size_; }
  /// One example's shape, C x H x W.
  const shape_t& sample_shape() const { return sample_shape_; }
  std::int64_t sample_numel() const { return sample_numel_; }
  int classes() const { return classes_; }
  /// Where it came from, e.g. "fashion-mnist train (/usr/share/datasets/fashion-mnist)".
  const std::string& description() const { return description_; }

  /// Pixels of example i (sample_numel bytes, CHW). No bounds check beyond debug asserts.
  const std::uint8_t* pixels(std::int64_t i) const { return pixels_.data() + i * sample_numel_; }
  std::int32_t label(std::int64_t i) const { return labels_[static_cast<std::size_t>(i)]; }
  /// The records of a streamed dataset; null for one held in memory.
  const image_records* records() const { return records_.get(); }

private:
  std::string description_;
  shape_t sample_shape_;
  std::int64_t sample_numel_;
  int classes_;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::int32_t> labels_;
  std::shared_ptr<const image_records> records_;
  std::int64_t size_ = 0;
};

enum class split { train, test };

/// The part of a dataset a run keeps (io/dataset_subset.hpp says how it is chosen).
struct subset_options {
  std::vector<int> classes; ///< the labels kept, increasing; empty: every class
  std::int64_t first = 0;   ///< keep the first N examples left by the filter; 0: all
  int class_count = 0;      ///< the subset's classes(); 0: the dataset's
  bool active() const { return !classes.empty() || first > 0 || class_count > 0; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, subset_options& x) {
  return f(x.classes, x.first, x.class_count);
}

struct dataset_options {
  std::string name = "fashion-mnist"; ///< fashion-mnist | mnist | cifar10 | synthetic | recordio
  std::string dir = "/usr/share/datasets/fashion-mnist"; ///< recordio: the .rec file
  split which = split::train;
  /// synthetic only: example shape, classes and count (train) / count / 6 (test).
  shape_t synthetic_shape{1, 28, 28};
  int synthetic_classes = 10;
  std::int64_t synthetic_size = 60000;
  std::uint64_t synthetic_seed = 0;
  /// recordio only: the .idx ("" walks the .rec), batches' image shape, classes, and whether
  /// corrupt records are dropped (and counted) instead of stopping the run.
  std::string record_index;
  shape_t record_shape{3, 224, 224};
  int record_classes = 1000;
  bool skip_bad_records = false;
  /// Files and synthetic data: the part kept (every example by default).
  subset_options subset;
};

/// Fields in declaration order, for CAF's serializers and graph's value_hash (no CAF here).
/// `split` needs no overload: CAF 0.17 and value_hash write an enum as its underlying integer.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dataset_options& x) {
  return f(x.name, x.dir, x.which, x.synthetic_shape, x.synthetic_classes, x.synthetic_size,
           x.synthetic_seed, x.record_index, x.record_shape, x.record_classes, x.skip_bad_records,
           x.subset);
}

/// Opens a dataset by name, then takes its `subset` (take_subset); throws io_error (file problems)
/// or std::invalid_argument (unknown name) with a message that names what and where.
std::shared_ptr<const dataset> open_dataset(const dataset_options& options);
/// Names accepted by open_dataset.
std::vector<std::string> dataset_names();

} // namespace troupe
