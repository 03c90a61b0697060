// See frame_priority.hpp. The rank is computed per frame as it is queued: a handful of keys per
// push, so a scan, not an index.
#include <troupe/cluster/frame_priority.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

namespace troupe {

forward_order forward_order_of(const placement_plan& plan) {
  const auto& shards = plan.keys.shards;
  struct where {
    std::size_t shard, key;
  };
  std::vector<where> all;
  for (std::size_t s = 0; s < shards.size(); ++s)
    for (std::size_t k = 0; k < shards[s].size(); ++k)
      all.push_back({s, k});
  // Slot order is the model's forward order (placement_plan::parameters); a sliced parameter's
  // slices are needed front to back.
  std::stable_sort(all.begin(), all.end(), [&](const where& a, const where& b) {
    const auto& x = shards[a.shard][a.key];
    const auto& y = shards[b.shard][b.key];
    return std::tie(x.slot, x.offset) < std::tie(y.slot, y.offset);
  });
  forward_order order;
  order.position.resize(shards.size());
  for (std::size_t s = 0; s < shards.size(); ++s)
    order.position[s].resize(shards[s].size());
  for (std::size_t i = 0; i < all.size(); ++i)
    order.position[all[i].shard][all[i].key] = i;
  return order;
}

namespace {

std::uint64_t rank_of_keys(std::uint32_t shard, const std::vector<std::size_t>& keys, const forward_order& order) {
  if (shard >= order.position.size() || keys.empty())
    return unranked;
  const auto& positions = order.position[shard];
  std::uint64_t first = unranked;
  for (auto k : keys) {
    if (k >= positions.size())
      return unranked;
    first = std::min(first, positions[k] + 1);
  }
  return first;
}

} // namespace

std::uint64_t frame_rank(const wire_message& message, const forward_order& order) {
  return std::visit(
    [&](const auto& m) -> std::uint64_t {
      using kind = std::decay_t<decltype(m)>;
      if constexpr (std::is_base_of_v<push_message, kind>)  // a push or a replicate
        return rank_of_keys(m.shard, m.push.keys, order);
      else if constexpr (std::is_same_v<kind, weights_message>)
        return rank_of_keys(m.shard, m.weights.keys, order);
      else
        return control_rank;
    },
    message);
}

std::vector<ranked_push> pushes_to_node(const placement_plan& plan, const forward_order& order, int node) {
  std::vector<int> node_of_shard(plan.keys.shards.size(), -1);
  for (const auto& actor : plan.actors)
    if (actor.role == plan_role::shard && actor.index >= 0 && static_cast<std::size_t>(actor.index) < node_of_shard.size())
      node_of_shard[static_cast<std::size_t>(actor.index)] = actor.node;
  std::vector<ranked_push> pushes;
  for (const auto& group : plan.keys.groups)
    if (group.shard < node_of_shard.size() && node_of_shard[group.shard] == node)
      pushes.push_back({rank_of_keys(static_cast<std::uint32_t>(group.shard), group.keys, order),
                        group.elements * static_cast<std::int64_t>(sizeof(float))});
  std::sort(pushes.begin(), pushes.end(), [](const ranked_push& a, const ranked_push& b) { return a.rank < b.rank; });
  return pushes;
}

std::vector<std::uint64_t> fixed_push_order(std::vector<ranked_push> pushes, std::int64_t backward_bytes) {
  std::sort(pushes.begin(), pushes.end(), [](const ranked_push& a, const ranked_push& b) { return a.rank < b.rank; });
  for (std::size_t i = 0; i < pushes.size(); ++i) {
    if (pushes[i].rank == unranked || pushes[i].rank == control_rank)
      throw std::invalid_argument("a fixed push order needs every push ranked (push " + std::to_string(i) + " is not)");
    if (i > 0 && pushes[i].rank == pushes[i - 1].rank)
      throw std::invalid_argument("a fixed push order lists rank " + std::to_string(pushes[i].rank) + " twice");
    if (pushes[i].bytes < 0)
      throw std::invalid_argument("a fixed push order's push of rank " + std::to_string(pushes[i].rank)
                                  + " has negative bytes");
  }
  // The last layers' pushes while their bytes are short of what backward's time carries.
  std::size_t first_late = pushes.size();
  std::int64_t carried = 0;
  while (first_late > 0 && carried < backward_bytes)
    carried += pushes[--first_late].bytes;
  std::vector<std::uint64_t> ranks;
  ranks.reserve(pushes.size());
  for (std::size_t i = pushes.size(); i-- > first_late;)
    ranks.push_back(pushes[i].rank);
  for (std::size_t i = 0; i < first_late; ++i)
    ranks.push_back(pushes[i].rank);
  return ranks;
}

} // namespace troupe
