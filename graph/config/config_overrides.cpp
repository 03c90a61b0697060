// Applying typed overrides (see config_overrides.hpp). Each value passes the check its key
// passes in a statement, against the same range (key_ranges.hpp), so a flag and a key accept
// the same values; a refusal has no position to point at and names the value as its giver
// does (config_overrides::name_of: "--image-shape").
#include "graph/config/config_overrides.hpp"

#include <algorithm>

#include <troupe/graph/config/key_ranges.hpp>
#include <troupe/io/dataset_subset.hpp>

#include "graph/config/recordio_keys.hpp"
#include "graph/config/value_reader.hpp"

namespace troupe {

namespace {

[[noreturn]] void refuse(const std::string& message) {
  throw config_error(message, message);
}

std::string name_of(const config_overrides& o, const std::string& key) {
  return o.name_of ? o.name_of(key) : key;
}

template <typename T> void set_given(located<T>& target, T value) {
  target.value = std::move(value);
  target.span = source_span{};
  target.given = true;
}

// A number against the one range its key shares with its flag.
template <typename T> T in_range(const config_overrides& o, const std::string& key, T v) {
  const auto& range = range_of_key(key);
  if (!range.contains(static_cast<double>(v)))
    refuse(name_of(o, key) + " must be " + range_text(range) + ", got "
           + shortest_number(static_cast<double>(v)));
  return v;
}

// A value the dataset's statement has no key for, as `unknown key` is for the text.
void refuse_unless(bool takes, bool given, const config_overrides& o, const std::string& key,
                   const std::string& dataset) {
  if (given && !takes)
    refuse(name_of(o, key) + " does not apply to " + dataset + " data");
}

std::vector<std::int64_t> checked_shape(const config_overrides& o,
                                        const std::vector<std::int64_t>& shape, bool recordio) {
  const auto name = name_of(o, "data.shape");
  if (shape.size() != 3)
    refuse(name + " must have 3 elements [channels, height, width]");
  for (auto extent : shape)
    in_range(o, "data.shape", extent);
  if (recordio && shape[0] != 3)
    refuse(name + ": recordio images are RGB, so C must be 3, got " + std::to_string(shape[0]));
  return shape;
}

std::vector<double> checked_rgb(const config_overrides& o, const std::vector<double>& values,
                                const std::string& key) {
  std::size_t bad = 0;
  const auto problem = rgb_problem(values, key, name_of(o, "data." + key), bad);
  if (!problem.empty())
    refuse(problem);
  return values;
}

// What read_data (job_config.cpp) makes of the statement the override stands for.
data_config data_of(const data_override& d, const config_overrides& o) {
  if (std::find(data_statement_calls.begin(), data_statement_calls.end(), d.dataset)
      == data_statement_calls.end())
    refuse(name_of(o, "data.dataset") + ": unknown dataset '" + d.dataset
           + "' (known: " + join_names(data_statement_calls) + ")");
  const bool synthetic = d.dataset == "synthetic";
  const bool recordio = d.dataset == "recordio";
  refuse_unless(!synthetic, d.dir.has_value(), o, recordio ? "data.path" : "data.dir", d.dataset);
  refuse_unless(recordio, d.index.has_value(), o, "data.index", d.dataset);
  refuse_unless(synthetic || recordio, d.shape.has_value(), o, "data.shape", d.dataset);
  refuse_unless(synthetic, d.examples.has_value(), o, "data.examples", d.dataset);
  refuse_unless(!recordio, d.class_subset.has_value(), o, "data.class_subset", d.dataset);
  refuse_unless(!synthetic && !recordio, d.first.has_value(), o, "data.first", d.dataset);
  refuse_unless(recordio, d.rgb_mean.has_value(), o, "data.rgb_mean", d.dataset);
  refuse_unless(recordio, d.rgb_std.has_value(), o, "data.rgb_std", d.dataset);
  data_config out;
  set_given(out.dataset, d.dataset);
  if (d.dir)
    set_given(out.dir, *d.dir);
  if (d.index)
    set_given(out.index, *d.index);
  if (d.shape)
    set_given(out.shape, checked_shape(o, *d.shape, recordio));
  if (d.classes)
    set_given(out.classes, in_range(o, "data.classes", *d.classes));
  if (d.examples)
    set_given(out.examples, in_range(o, "data.examples", *d.examples));
  if (d.class_subset) {
    try {
      parse_class_list(*d.class_subset);
    } catch (const std::invalid_argument& e) {
      refuse(name_of(o, "data.class_subset") + ": " + e.what());
    }
    set_given(out.class_subset, *d.class_subset);
  }
  if (d.first)
    set_given(out.first, in_range(o, "data.first", *d.first));
  if (d.rgb_mean)
    set_given(out.rgb_mean, checked_rgb(o, *d.rgb_mean, "rgb_mean"));
  if (d.rgb_std)
    set_given(out.rgb_std, checked_rgb(o, *d.rgb_std, "rgb_std"));
  if (synthetic)
    out.normalize.value = false; // synthetic data has no standard normalization
  if (recordio && !out.shape.given)
    out.shape.value = {3, 224, 224};
  return out;
}

} // namespace

overridden_data apply_overrides(job_config& c, const config_overrides& o) {
  overridden_data given;
  if (o.train_data) {
    c.train_data = data_of(*o.train_data, o);
    given.train = true;
  }
  if (o.validation_data) {
    c.validation_data = data_of(*o.validation_data, o);
    given.validation = true;
  }
  auto& workers = c.cluster.workers;
  if (o.workers)
    set_given(workers, in_range(o, "cluster.workers", *o.workers));
  if (o.default_workers) // asked even when a count was given: the asker may need the cluster
    if (const auto count = o.default_workers(c.cluster); count && !workers.given)
      workers.value = *count;
  return given;
}

} // namespace troupe
