// Backward completes parameters in reverse slot order (the model's backward runs its nodes in
// reverse), so "backward order" below is descending slot; slices of one parameter are ready
// together and keep ascending offsets. Stable sorts and first-minimum choices make every step
// reproducible across runs and between the session and `troupe graph`.
#include <troupe/graph/config/key_assignment.hpp>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <tuple>

namespace troupe {

namespace {

// Slices start on 64-byte boundaries (16 floats, the tensors' alignment) and all but a
// parameter's last hold a whole number of them: a connection then sends every slice but the
// last straight from the tensor, where Cap'n Proto wants 8-byte aligned values of whole words
// (frame_codec.hpp), instead of copying it into the frame.
constexpr std::int64_t slice_unit = 16;

std::vector<key_slice> cut(const std::vector<std::int64_t>& sizes, std::int64_t slice_elements) {
  const std::int64_t unit = slice_elements >= slice_unit ? slice_unit : 1;
  slice_elements = slice_elements / unit * unit;
  std::vector<key_slice> keys;
  for (std::size_t slot = 0; slot < sizes.size(); ++slot) {
    const std::int64_t n = sizes[slot];
    if (n <= 0)
      throw std::invalid_argument("parameter " + std::to_string(slot) + " has " + std::to_string(n)
                                  + " elements");
    const std::int64_t pieces = (n + slice_elements - 1) / slice_elements;
    // Whole units spread evenly (the first `extra` get one more), the odd rest to the last:
    // no slice exceeds slice_elements and none is empty (see key_assignment_test).
    const std::int64_t units = n / unit, rest = n % unit;
    const std::int64_t base = units / pieces, extra = units % pieces;
    std::int64_t offset = 0;
    for (std::int64_t i = 0; i < pieces; ++i) {
      const std::int64_t length =
        (base + (i < extra ? 1 : 0)) * unit + (i + 1 == pieces ? rest : 0);
      keys.push_back(key_slice{slot, offset, length, pieces == 1});
      offset += length;
    }
  }
  return keys;
}

bool backward_before(const key_slice& a, const key_slice& b) {
  return std::make_tuple(b.slot, a.offset) < std::make_tuple(a.slot, b.offset);
}

} // namespace

key_plan plan_keys(const std::vector<std::int64_t>& sizes, int shards,
                   const key_plan_options& options) {
  if (shards < 1)
    throw std::invalid_argument("shards must be at least 1, got " + std::to_string(shards));
  if (options.slice_bytes < 4)
    throw std::invalid_argument("slice bytes must be at least 4 (one float), got "
                                + std::to_string(options.slice_bytes));
  if (options.group_bytes < 0)
    throw std::invalid_argument("group bytes must not be negative, got "
                                + std::to_string(options.group_bytes));
  auto keys = cut(sizes, options.slice_bytes / 4);

  // Placement: largest first (stable: equal sizes in slot/offset order) onto the least loaded.
  std::vector<std::size_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return keys[a].length > keys[b].length; });
  std::vector<std::vector<key_slice>> placed(static_cast<std::size_t>(shards));
  std::vector<std::int64_t> load(placed.size(), 0);
  for (auto k : order) {
    auto target =
      static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    placed[target].push_back(keys[k]);
    load[target] += keys[k].length;
  }
  key_plan plan;
  for (auto& shard_keys : placed) {
    if (shard_keys.empty())
      continue;
    std::sort(shard_keys.begin(), shard_keys.end(), backward_before);
    plan.shards.push_back(std::move(shard_keys));
  }

  // Grouping, per shard in backward order.
  const std::int64_t group_elements = options.group_bytes / 4;
  for (std::size_t s = 0; s < plan.shards.size(); ++s) {
    push_group open{s, {}, 0};
    auto close = [&] {
      if (!open.keys.empty())
        plan.groups.push_back(std::move(open));
      open = push_group{s, {}, 0};
    };
    for (std::size_t k = 0; k < plan.shards[s].size(); ++k) {
      const auto length = plan.shards[s][k].length;
      if (length >= group_elements || open.elements + length > group_elements)
        close();
      open.keys.push_back(k);
      open.elements += length;
      if (length >= group_elements)
        close();
    }
    close();
  }
  // A group is complete when its earliest parameter (lowest slot) is; push in that order.
  auto ready_slot = [&](const push_group& g) {
    std::size_t lowest = plan.shards[g.shard][g.keys.front()].slot;
    for (auto k : g.keys)
      lowest = std::min(lowest, plan.shards[g.shard][k].slot);
    return lowest;
  };
  std::stable_sort(
    plan.groups.begin(), plan.groups.end(),
    [&](const push_group& a, const push_group& b) { return ready_slot(a) > ready_slot(b); });
  return plan;
}

std::vector<double> group_work(const std::vector<double>& slot_work,
                               const std::vector<std::vector<key_slice>>& shard_keys,
                               const std::vector<push_group>& groups) {
  std::vector<double> slot_elements(slot_work.size(), 0.0);
  for (const auto& group : groups)
    for (auto k : group.keys) {
      const auto& key = shard_keys.at(group.shard).at(k);
      slot_elements.at(key.slot) += static_cast<double>(key.length);
    }
  std::vector<double> work(groups.size(), 0.0);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (auto k : groups[g].keys) {
      const auto& key = shard_keys[groups[g].shard][k];
      if (slot_elements[key.slot] > 0)
        work[g] += slot_work[key.slot] * static_cast<double>(key.length) / slot_elements[key.slot];
    }
  return work;
}

tensor key_view(const tensor& parameter, const key_slice& key) {
  return key.whole ? parameter : parameter.flat_slice(key.offset, key.length);
}

void place_key(tensor& parameter, const key_slice& key, tensor values) {
  // Values come from another actor (possibly another host): check before writing anything.
  // Written so that offset + length cannot overflow.
  const std::int64_t size = parameter.numel();
  if (values.numel() != key.length || key.offset < 0 || key.length < 0
      || key.offset > size - key.length) {
    throw std::invalid_argument("key " + key_name("parameter " + std::to_string(key.slot), key)
                                + ": " + std::to_string(values.numel()) + " values for a key of "
                                + std::to_string(key.length) + " elements in a parameter of "
                                + std::to_string(size));
  }
  if (key.whole) {
    parameter = std::move(values);
    return;
  }
  if (!parameter.unique()) // a reader (or an earlier whole-key handle) still sees it
    parameter = parameter.clone();
  std::copy_n(values.data(), key.length, parameter.data() + key.offset);
}

std::string key_name(const std::string& parameter, const key_slice& key) {
  if (key.whole)
    return parameter;
  return parameter + "[" + std::to_string(key.offset) + ":"
         + std::to_string(key.offset + key.length) + "]";
}

} // namespace troupe
