// Range lookups over the key table (key_table.hpp), and the range in words.
#include <troupe/graph/config/key_ranges.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <troupe/graph/config/key_table.hpp>

namespace troupe {

int max_compute_threads() {
  return static_cast<int>(
    std::min<unsigned>(4096, std::max(64u, 4 * std::thread::hardware_concurrency())));
}

const key_range& range_of_key(const std::string& key) {
  const auto& k = config_key_of(key);
  if (!k.range)
    throw std::out_of_range("no range for config key " + key);
  return *k.range;
}

const key_range* range_of_flag(const std::string& flag) {
  // The one flag that sets a key of the validation data rather than the training data's.
  if (flag == "val-batch-size")
    return range_of_flag("batch-size");
  const auto* k = config_key_of_flag(flag);
  return k != nullptr && k->range ? &*k->range : nullptr;
}

std::string shortest_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18)
    return std::to_string(static_cast<long long>(v));
  char text[64];
  auto end = std::to_chars(text, text + sizeof text, v).ptr;
  return std::string(text, end);
}

std::string range_text(const key_range& r) {
  std::string text;
  if (!r.min_open && !r.max_open)
    text = "between " + shortest_number(r.min) + " and " + shortest_number(r.max);
  else
    text = std::string(r.min_open ? "above " : "at least ") + shortest_number(r.min)
           + (r.max_open ? " and below " : " and at most ") + shortest_number(r.max);
  if (*r.why != '\0')
    text += std::string(" (") + r.why + ")";
  return text;
}

} // namespace troupe
