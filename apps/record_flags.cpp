// RecordIO flags -> typed data statements and key overrides (see record_flags.hpp). The
// values are checked where the config applies them (graph/config/config_overrides.cpp), by the
// code that checks the same keys in a file; here only the flags' text is read.
#include "apps/record_flags.hpp"

#include "apps/commands.hpp"

namespace troupe {

namespace {

std::vector<double> rgb_flag(const char* flag, const std::string& text) {
  auto values = parse_number_list(flag, text);
  if (values.size() != 3)
    throw usage_error(std::string("--") + flag + ": expected 3 values r,g,b, got '" + text + "'");
  return values;
}

template <typename T> void set_given(located<T>& target, T value) {
  target.value = std::move(value);
  target.span = source_span{};
  target.given = true;
}

} // namespace

const std::vector<std::string> record_statement_flags{"data-train",   "data-train-idx", "data-val",
                                                      "data-val-idx", "rgb-mean",       "rgb-std"};

void record_flags::declare(flag_set& f) {
  f.add("data-train", train, "RecordIO training images (.rec, MXNet's format; see docs/data.md)");
  f.add("data-train-idx", train_index,
        "its .idx (\"\": PREFIX.idx beside PREFIX.rec if present, else the .rec is walked)");
  f.add("data-val", val, "RecordIO validation images (.rec); without it no validation");
  f.add("data-val-idx", val_index, "its .idx (\"\": as for --data-train-idx)");
  f.add(
    "rgb-mean", rgb_mean,
    "RecordIO: per-channel mean in pixel units, e.g. 123.68,116.779,103.939 (\"\": ImageNet's)");
  f.add("rgb-std", rgb_std,
        "RecordIO: per-channel standard deviation in pixel units (\"\": ImageNet's)");
  f.add_switch("skip-bad-records", skip_bad_records,
               "RecordIO: drop corrupt records, undecodable images and out-of-range labels, "
               "counting them per epoch, instead of stopping");
  f.add("random-crop", random_crop,
        "RecordIO training: random resized crop 0/1 (-1: 1); 0 resizes and centre-crops as "
        "validation does");
  f.add("min-random-area", min_area,
        "RecordIO: smallest crop area fraction of the random resized crop (-1: 0.08)");
  f.add("max-random-area", max_area, "RecordIO: largest crop area fraction (-1: 1)");
  f.add("min-aspect-ratio", min_aspect,
        "RecordIO: smallest width / height of the random resized crop, in (0, 100] (-1: 0.75)");
  f.add("max-aspect-ratio", max_aspect,
        "RecordIO: largest width / height of the random resized crop (-1: 1.3333)");
}

void check_record_flags(const record_flags& r, const flag_set& f) {
  check_range("random-crop", r.random_crop, -1, 1, "the dataset's default");
  for (auto [flag, value] :
       {std::pair{"min-random-area", r.min_area}, std::pair{"max-random-area", r.max_area}})
    if (f.given(flag) && !(value > 0 && value <= 1))
      throw usage_error(std::string("--") + flag + " must be in (0, 1], got "
                        + std::to_string(value));
  for (auto [flag, value] :
       {std::pair{"min-aspect-ratio", r.min_aspect}, std::pair{"max-aspect-ratio", r.max_aspect}})
    if (f.given(flag) && !(value > 0 && value <= 100))
      throw usage_error(std::string("--") + flag + " must be in (0, 100], got "
                        + number_text(value));
  if (r.train.empty())
    for (const auto& flag : record_statement_flags)
      if (f.given(flag) && flag != "data-train")
        throw usage_error("--" + flag + " needs --data-train (RecordIO data)");
}

void add_record_overrides(const record_flags& r, const flag_set& f, const std::string& dataset,
                          const std::string& image_shape, int num_classes, config_overrides& o) {
  if (r.train.empty())
    throw usage_error("--dataset recordio: give the files with --data-train (and --data-val)");
  if (f.given("dataset") && dataset != "recordio")
    throw usage_error("--data-train is RecordIO data; it cannot be combined with --dataset "
                      + dataset);
  if (f.given("data-dir"))
    throw usage_error(
      "--data-dir cannot be combined with --data-train: RecordIO data is named by its files");
  data_override common;
  common.dataset = "recordio";
  if (f.given("image-shape"))
    common.shape = parse_shape("image-shape", image_shape);
  if (f.given("num-classes"))
    common.classes = num_classes;
  if (!r.rgb_mean.empty())
    common.rgb_mean = rgb_flag("rgb-mean", r.rgb_mean);
  if (!r.rgb_std.empty())
    common.rgb_std = rgb_flag("rgb-std", r.rgb_std);
  auto statement = [&common](const std::string& path, const std::string& index) {
    auto d = common;
    d.dir = path;
    if (!index.empty())
      d.index = index;
    return d;
  };
  o.train_data = statement(r.train, r.train_index);
  if (!r.val.empty())
    o.validation_data = statement(r.val, r.val_index);
}

void apply_record_flags(const record_flags& r, const flag_set& f, data_config& train,
                        data_config& val) {
  if (r.random_crop >= 0)
    set_given(train.random_crop, r.random_crop != 0);
  if (f.given("min-random-area") || f.given("max-random-area")) {
    auto scale = train.scale.value;
    if (f.given("min-random-area"))
      scale[0] = r.min_area;
    if (f.given("max-random-area"))
      scale[1] = r.max_area;
    if (scale[0] > scale[1])
      throw usage_error("--min-random-area must not exceed --max-random-area");
    set_given(train.scale, scale);
  }
  if (f.given("min-aspect-ratio") || f.given("max-aspect-ratio")) {
    if (train.dataset.value != "recordio")
      throw usage_error(std::string("--") + (f.given("min-aspect-ratio") ? "min" : "max")
                        + "-aspect-ratio shapes the random resized crop of RecordIO data, not "
                        + train.dataset.value);
    auto ratio = train.ratio.value;
    if (f.given("min-aspect-ratio"))
      ratio[0] = r.min_aspect;
    if (f.given("max-aspect-ratio"))
      ratio[1] = r.max_aspect;
    if (ratio[0] > ratio[1])
      throw usage_error("--min-aspect-ratio (" + number_text(ratio[0])
                        + ") must not exceed --max-aspect-ratio (" + number_text(ratio[1]) + ")");
    set_given(train.ratio, ratio);
  }
  if (r.skip_bad_records) {
    set_given(train.skip_bad_records, true);
    set_given(val.skip_bad_records, true);
  }
}

} // namespace troupe
