// Greedy balancing (LPT): stable sort keeps equal-sized keys in slot order, and min_element
// returns the first least-loaded shard, which makes the split reproducible across runs.
#include "graph/config/key_assignment.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace troupe {

std::vector<std::vector<std::size_t>> assign_keys(const std::vector<std::int64_t>& sizes,
                                                  int shards) {
  if (shards < 1)
    throw std::invalid_argument("shards must be at least 1, got " + std::to_string(shards));
  std::vector<std::size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::vector<std::size_t>> out(static_cast<std::size_t>(shards));
  std::vector<std::int64_t> load(out.size(), 0);
  for (auto slot : order) {
    auto target = std::min_element(load.begin(), load.end()) - load.begin();
    out[target].push_back(slot);
    load[target] += sizes[slot];
  }
  for (auto& slots : out)
    std::sort(slots.begin(), slots.end());
  out.erase(std::remove_if(out.begin(), out.end(), [](auto& s) { return s.empty(); }), out.end());
  return out;
}

} // namespace troupe
