// Reading of the recordio data statement's keys (see recordio_keys.hpp). Per-channel
// statistics stay in pixel units here, as MXNet's flags give them; apps/ divides by 255.
#include "graph/config/recordio_keys.hpp"

#include <sstream>

namespace troupe {

const std::vector<std::string> recordio_keys{"path",     "index",   "shape",           "classes",
                                             "rgb_mean", "rgb_std", "random_crop",     "scale",
                                             "ratio",    "resize",  "skip_bad_records"};

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

} // namespace

std::string rgb_problem(const std::vector<double>& values, const std::string& key,
                        const std::string& name, std::size_t& bad) {
  bad = values.size();
  if (values.size() != 3)
    return name + " must have 3 values [r, g, b] in pixel units (0..255)";
  const auto& range = range_of_key("data." + key);
  for (bad = 0; bad < 3; ++bad)
    if (!range.contains(values[bad]))
      return name + " values must be in " + (range.min_open ? "(" : "[")
             + shortest_number(range.min) + ", " + shortest_number(range.max) + "]";
  return "";
}

void read_recordio_keys(const value_reader& r, const keyed_values& k, data_config& d) {
  if (auto* v = k.find("path"))
    r.set(d.dir, r.string(*v, "path"), *v);
  if (auto* v = k.find("index"))
    r.set(d.index, r.string(*v, "index"), *v);
  if (auto* v = k.find("rgb_mean"))
    r.set(d.rgb_mean, rgb_values(r, *v, "rgb_mean"), *v);
  if (auto* v = k.find("rgb_std"))
    r.set(d.rgb_std, rgb_values(r, *v, "rgb_std"), *v);
  if (auto* v = k.find("random_crop"))
    r.set(d.random_crop, r.boolean(*v, "random_crop"), *v);
  if (auto* v = k.find("scale"))
    r.set(d.scale, range_pair(r, *v, "scale", 0, 1), *v);
  if (auto* v = k.find("ratio"))
    r.set(d.ratio, range_pair(r, *v, "ratio", 0, 100), *v);
  if (auto* v = k.find("resize"))
    r.set(d.resize, r.integer(*v, "resize", 1, 65535), *v);
  if (auto* v = k.find("skip_bad_records"))
    r.set(d.skip_bad_records, r.boolean(*v, "skip_bad_records"), *v);
  if (!d.shape.given)
    d.shape.value = {3, 224, 224};
  else if (d.shape.value[0] != 3)
    r.fail(k.find("shape")->span, "recordio images are RGB: shape must be [3, height, width]");
}

} // namespace troupe
