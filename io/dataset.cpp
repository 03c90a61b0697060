// The in-memory dataset and the name -> reader dispatch behind open_dataset.
//
// The constructor is the one place that checks the invariants every consumer relies on
// (pixels match labels times the sample size, labels lie in [0, classes)), so readers can
// hand over their buffers and batch code can index without checks. Dispatch by name lives
// here rather than in apps/ so that every front end accepts the same names.
#include <troupe/io/dataset.hpp>

#include <sstream>
#include <utility>

#include <troupe/io/cifar10_reader.hpp>
#include <troupe/io/dataset_subset.hpp>
#include <troupe/io/idx_reader.hpp>
#include <troupe/io/record_dataset.hpp>
#include <troupe/io/synthetic.hpp>

namespace troupe {

namespace {

void check_sample_shape(const std::string& description, const shape_t& shape) {
  bool ok = shape.size() == 3;
  for (auto extent : shape)
    ok = ok && extent > 0;
  if (!ok)
    throw io_error(description + ": sample shape " + shape_string(shape)
                   + " is not C x H x W with positive extents");
}

void check_labels(const std::string& description, const std::vector<std::int32_t>& labels,
                  int classes) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      std::ostringstream message;
      message << description << ": label " << labels[i] << " at index " << i
              << " is out of range [0, " << classes << ")";
      throw io_error(message.str());
    }
  }
}

} // namespace

dataset::dataset(std::string description, shape_t sample_shape, int classes,
                 std::vector<std::uint8_t> pixels, std::vector<std::int32_t> labels)
    : description_(std::move(description)), sample_shape_(std::move(sample_shape)),
      sample_numel_(0), classes_(classes), pixels_(std::move(pixels)), labels_(std::move(labels)) {
  check_sample_shape(description_, sample_shape_);
  sample_numel_ = shape_numel(sample_shape_);
  if (classes_ <= 0)
    throw io_error(description_ + ": class count " + std::to_string(classes_)
                   + " must be positive");
  const auto expected =
    static_cast<std::uint64_t>(labels_.size()) * static_cast<std::uint64_t>(sample_numel_);
  if (pixels_.size() != expected) {
    std::ostringstream message;
    message << description_ << ": " << pixels_.size() << " pixel bytes do not match "
            << labels_.size() << " labels of " << shape_string(sample_shape_) << " (" << expected
            << " bytes)";
    throw io_error(message.str());
  }
  check_labels(description_, labels_, classes_);
  size_ = static_cast<std::int64_t>(labels_.size());
}

dataset::dataset(std::string description, shape_t sample_shape, int classes,
                 std::shared_ptr<const image_records> records)
    : description_(std::move(description)), sample_shape_(std::move(sample_shape)),
      sample_numel_(0), classes_(classes), records_(std::move(records)) {
  check_sample_shape(description_, sample_shape_);
  sample_numel_ = shape_numel(sample_shape_);
  if (classes_ <= 0)
    throw io_error(description_ + ": class count " + std::to_string(classes_)
                   + " must be positive");
  if (!records_)
    throw io_error(description_ + ": no records given");
  size_ = records_->size();
}

std::vector<std::string> dataset_names() {
  return {"fashion-mnist", "mnist", "cifar10", "synthetic", "recordio"};
}

namespace {

std::shared_ptr<const dataset> open_whole(const dataset_options& options) {
  if (options.name == "fashion-mnist" || options.name == "mnist")
    return load_mnist_dir(options.dir, options.which, options.name);
  if (options.name == "cifar10")
    return load_cifar10_dir(options.dir, options.which);
  if (options.name == "synthetic") {
    synthetic_options synthetic;
    synthetic.sample_shape = options.synthetic_shape;
    synthetic.classes = options.synthetic_classes;
    synthetic.train_size = options.synthetic_size;
    synthetic.seed = options.synthetic_seed;
    return make_synthetic(synthetic, options.which);
  }
  if (options.name == "recordio") {
    record_dataset_options records;
    records.path = options.dir;
    records.index_path = options.record_index;
    records.image_shape = options.record_shape;
    records.classes = options.record_classes;
    records.skip_bad_records = options.skip_bad_records;
    return open_record_dataset(records);
  }
  std::string valid;
  for (const auto& name : dataset_names())
    valid += (valid.empty() ? "" : ", ") + name;
  throw std::invalid_argument("unknown dataset '" + options.name + "'; valid names: " + valid);
}

} // namespace

std::shared_ptr<const dataset> open_dataset(const dataset_options& options) {
  return take_subset(open_whole(options), options.subset);
}

} // namespace troupe
