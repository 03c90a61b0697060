// The keys of a `data` statement (key_table.hpp): what every dataset takes (batch and
// augmentation), what file datasets, synthetic data and RecordIO take of their own. Per-channel
// statistics stay in pixel units here, as MXNet's flags give them; apps/ divides by 255.
#include <sstream>

#include "graph/config/key_builder.hpp"
#include "graph/config/recordio_keys.hpp"
#include "graph/config/value_reader.hpp"
#include <troupe/io/dataset_subset.hpp>

namespace troupe {

namespace {

// A [min, max] pair within [low, high].
std::vector<double> range_pair(const value_reader& r, const syntax_value& v, const std::string& key,
                               double low, double high) {
  auto values = r.reals(v, key, low);
  if (values.size() != 2 || !(values[0] > low) || values[0] > values[1] || values[1] > high) {
    std::ostringstream message;
    message << key << " must be [min, max] with " << low << " < min <= max <= " << high;
    r.fail(v.span, message.str());
  }
  return values;
}

// Per-channel pixel statistics, at the element that is wrong.
std::vector<double> rgb_values(const value_reader& r, const syntax_value& v,
                               const std::string& key) {
  auto values = r.reals(v, key, 0);
  std::size_t bad = 0;
  const auto problem = rgb_problem(values, key, key, bad);
  if (!problem.empty())
    r.fail(bad < v.items.size() ? v.items[bad].span : v.span, problem);
  return values;
}

void read_shape(const value_reader& r, const syntax_value& v, key_target& t) {
  const auto& range = *config_key_of("data.shape").range;
  r.set(t.data.shape,
        r.integers(v, "shape", static_cast<std::int64_t>(range.min),
                   static_cast<std::int64_t>(range.max)),
        v);
  if (t.data.shape.value.size() != 3)
    r.fail(v.span, "shape must have 3 elements [channels, height, width]");
}

void read_rgb_mean(const value_reader& r, const syntax_value& v, key_target& t) {
  r.set(t.data.rgb_mean, rgb_values(r, v, "rgb_mean"), v);
}

void read_rgb_std(const value_reader& r, const syntax_value& v, key_target& t) {
  r.set(t.data.rgb_std, rgb_values(r, v, "rgb_std"), v);
}

void read_scale(const value_reader& r, const syntax_value& v, key_target& t) {
  r.set(t.data.scale, range_pair(r, v, "scale", 0, 1), v);
}

void read_ratio(const value_reader& r, const syntax_value& v, key_target& t) {
  r.set(t.data.ratio, range_pair(r, v, "ratio", 0, 100), v);
}

void check_split(const value_reader& r, const syntax_value& v, key_target& t) {
  if (t.data.split.value != "train" && t.data.split.value != "test")
    r.fail(v.span, "split must be \"train\" or \"test\", got \"" + t.data.split.value + "\"");
}

void check_class_subset(const value_reader& r, const syntax_value& v, key_target& t) {
  try {
    parse_class_list(t.data.class_subset.value);
  } catch (const std::invalid_argument& e) {
    r.fail(v.span, e.what());
  }
}

void check_normalize(const value_reader& r, const syntax_value& v, key_target& t) {
  if (t.data.normalize.value && t.data.dataset.value == "synthetic")
    r.fail(v.span, "synthetic data has no standard normalization (use normalize = false)");
}

} // namespace

std::string rgb_problem(const std::vector<double>& values, const std::string& key,
                        const std::string& name, std::size_t& bad) {
  bad = values.size();
  if (values.size() != 3)
    return name + " must have 3 values [r, g, b] in pixel units (0..255)";
  const auto& range = *config_key_of("data." + key).range;
  for (bad = 0; bad < 3; ++bad)
    if (!range.contains(values[bad]))
      return name + " values must be in " + (range.min_open ? "(" : "[")
             + shortest_number(range.min) + ", " + shortest_number(range.max) + "]";
  return "";
}

namespace key_entries {

namespace {

template <auto Field> constexpr auto data = &data_field<Field>;

constexpr const char* files = "fashion_mnist mnist cifar10";
constexpr const char* not_recordio = "fashion_mnist mnist cifar10 synthetic";

} // namespace

std::vector<config_key> data_keys() {
  using k = key_type;
  return {
    entry("data", "batch", k::integer, data<&data_config::batch>)
      .within(whole(1, 1e9))
      .flag_is("batch-size")
      .default_is("128 (`train`), 500 (`val`)")
      .help_is("training examples per step of each compute (a step of W computes trains W times "
               "as many)",
               "in `data val`, examples per validation batch (--val-batch-size)"),
    entry("data", "mirror", k::boolean, data<&data_config::mirror>)
      .default_is("true for cifar10 and recordio `train`, else false")
      .help_is("random horizontal flip (--random-mirror 0|1)"),
    entry("data", "normalize", k::boolean, data<&data_config::normalize>)
      .checked_by(check_normalize)
      .default_is("true (false for synthetic)")
      .help_is("standard per-channel mean/stdev (recordio: ImageNet's, or rgb_mean/rgb_std)"),
    entry("data", "shuffle", k::boolean, data<&data_config::shuffle>)
      .default_is("true (`train`), false (`val`)")
      .help_is("reshuffle every epoch"),
    entry("data", "split", k::text, data<&data_config::split>)
      .only_in(not_recordio)
      .checked_by(check_split)
      .default_is("`\"train\"` for `train`, `\"test\"` for `val`")
      .help_is("which files to read"),
    entry("data", "crop_pad", k::integer, data<&data_config::crop_pad>)
      .within(whole(0, 64))
      .only_in(not_recordio)
      .default_is("4 for cifar10 `train`, else 0")
      .help_is("random crop after zero padding (--random-crop-pad)"),
    entry("data", "path", k::text, data<&data_config::dir>)
      .only_in("recordio")
      .flag_is("data-train")
      .default_is("required")
      .help_is("the `.rec` file"),
    entry("data", "index", k::text, data<&data_config::index>)
      .only_in("recordio")
      .flag_is("data-train-idx")
      .default_is("PATH with `.idx` when that file exists, else none")
      .help_is("the `.idx` (`key<TAB>offset` lines), checked against the `.rec` at start",
               "docs/data.md; without one the `.rec` is walked at start"),
    entry("data", "shape", k::list, data<&data_config::shape>)
      .within(whole(1, 4096))
      .only_in("synthetic recordio")
      .read_by(read_shape)
      .flag_is("image-shape")
      .default_is("[1, 28, 28]; recordio [3, 224, 224]")
      .help_is("synthetic: the examples; recordio: what each image is resampled to (C must be 3)"),
    entry("data", "classes", k::integer, data<&data_config::classes>)
      .within(whole(2, 100000))
      .flag_is("num-classes")
      .default_is("10; files: the files' classes")
      .help_is("classes (recordio: a label outside [0, classes) is a bad record; files: the "
               "model's outputs, at least the largest label kept + 1)"),
    entry("data", "examples", k::integer, data<&data_config::examples>)
      .within(whole(6, 1e9, "the test split is a sixth of it"))
      .only_in("synthetic")
      .flag_is("num-examples")
      .help_is("training examples (test: a sixth)"),
    entry("data", "class_subset", k::text, data<&data_config::class_subset>)
      .only_in(not_recordio)
      .checked_by(check_class_subset)
      .flag_is("classes")
      .default_is("`\"\"` (every class)")
      .help_is("keep only these classes' examples: \"0-4\" or \"0,1,2\"; labels keep their "
               "indices",
               "`data val` takes `data train`'s unless written (docs/data.md, \"Subsets\")"),
    entry("data", "first", k::integer, data<&data_config::first>)
      .within(whole(0, 1e9, "0: all"))
      .only_in(files)
      .help_is("keep the first N examples of the split, after class_subset (0: all)",
               "`troupe train --num-examples N` sets it on `data train` for file data"),
    entry("data", "rgb_mean", k::list, data<&data_config::rgb_mean>)
      .within(real(0, 255))
      .only_in("recordio")
      .read_by(read_rgb_mean)
      .flag_is("rgb-mean")
      .default_is("ImageNet's (123.675, 116.28, 103.53)")
      .help_is("per-channel mean in pixel units (0..255), as MXNet's --rgb-mean"),
    entry("data", "rgb_std", k::list, data<&data_config::rgb_std>)
      .within(real(0, 255, true))
      .only_in("recordio")
      .read_by(read_rgb_std)
      .flag_is("rgb-std")
      .default_is("ImageNet's (58.395, 57.12, 57.375)")
      .help_is("per-channel standard deviation in pixel units"),
    entry("data", "random_crop", k::boolean, data<&data_config::random_crop>)
      .only_in("recordio")
      .default_is("true (`train`), false (`val`)")
      .help_is("random resized crop; false: shorter side resized to `resize`, centre crop"),
    entry("data", "scale", k::list, data<&data_config::scale>)
      .only_in("recordio")
      .read_by(read_scale)
      .default_is("[0.08, 1]")
      .help_is("crop area as a fraction of the image, [min, max]"),
    entry("data", "ratio", k::list, data<&data_config::ratio>)
      .only_in("recordio")
      .read_by(read_ratio)
      .default_is("[0.75, 1.3333]")
      .help_is("crop width / height, [min, max] (drawn log-uniformly)",
               "--min-aspect-ratio and --max-aspect-ratio set its ends"),
    entry("data", "brightness", k::real, data<&data_config::brightness>)
      .within(real(0, 1))
      .only_in("recordio")
      .flag_is("brightness")
      .help_is("colour jitter: every value scaled by a factor drawn from [1 - b, 1 + b] per image",
               "0: none"),
    entry("data", "contrast", k::real, data<&data_config::contrast>)
      .within(real(0, 1))
      .only_in("recordio")
      .flag_is("contrast")
      .help_is("colour jitter: every value's distance from the image's mean grey scaled by a "
               "factor drawn from [1 - c, 1 + c]",
               "0: none"),
    entry("data", "saturation", k::real, data<&data_config::saturation>)
      .within(real(0, 1))
      .only_in("recordio")
      .flag_is("saturation")
      .help_is("colour jitter: each pixel's distance from its own grey scaled by a factor drawn "
               "from [1 - s, 1 + s]",
               "0: none"),
    entry("data", "max_rotate_angle", k::real, data<&data_config::max_rotate_angle>)
      .within(real(0, 180))
      .only_in("recordio")
      .flag_is("max-rotate-angle")
      .help_is("random rotation of each image by an angle drawn from [-a, a] degrees about its "
               "centre, corners outside black",
               "0: none"),
    entry("data", "resize", k::integer, data<&data_config::resize>)
      .within(whole(1, 65535))
      .only_in("recordio")
      .default_is("the shape's shorter side")
      .help_is("centre crop: shorter side first resized to this (e.g. 256 for 224)"),
    entry("data", "skip_bad_records", k::boolean, data<&data_config::skip_bad_records>)
      .only_in("recordio")
      .help_is("drop corrupt records, undecodable JPEGs and out-of-range labels (counted per "
               "epoch) instead of stopping"),
    entry("data", "dir", k::text, data<&data_config::dir>)
      .only_in(files)
      .flag_is("data-dir")
      .default_is("fashion_mnist: `/usr/share/datasets/fashion-mnist`, mnist: "
                  "`/usr/share/datasets/mnist`, cifar10: required")
      .help_is("directory with the files"),
  };
}

} // namespace key_entries

} // namespace troupe
