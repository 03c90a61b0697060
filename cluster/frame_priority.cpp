// See frame_priority.hpp. The rank is computed per frame as it is queued: a handful of keys per
// push, so a scan, not an index.
#include <troupe/cluster/frame_priority.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

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

std::uint64_t rank_of_keys(std::uint32_t shard, const std::vector<std::size_t>& keys,
                           const forward_order& order) {
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
      if constexpr (std::is_base_of_v<push_message, kind>) // a push or a replicate
        return rank_of_keys(m.shard, m.push.keys, order);
      else if constexpr (std::is_same_v<kind, weights_message>)
        return rank_of_keys(m.shard, m.weights.keys, order);
      else
        return control_rank;
    },
    message);
}

std::vector<std::uint64_t> light_ranks(const placement_plan& plan, const forward_order& order) {
  std::vector<double> slot_work;
  double total_work = 0;
  for (const auto& parameter : plan.parameters) {
    slot_work.push_back(parameter.forward_work);
    total_work += parameter.forward_work;
  }
  if (!(total_work > 0))
    return {};
  const auto work = group_work(slot_work, plan.keys.shards, plan.keys.groups);
  std::vector<std::pair<std::uint64_t, double>> shares; // (rank, part of the forward work)
  for (std::size_t g = 0; g < plan.keys.groups.size(); ++g) {
    const auto& group = plan.keys.groups[g];
    shares.emplace_back(rank_of_keys(static_cast<std::uint32_t>(group.shard), group.keys, order),
                        work[g] / total_work);
  }
  std::sort(shares.begin(), shares.end());
  std::size_t first = shares.size();
  double held = 0;
  while (first > 0 && held + shares[first - 1].second <= light_forward_share)
    held += shares[--first].second;
  std::vector<std::uint64_t> ranks;
  for (auto i = first; i < shares.size(); ++i)
    ranks.push_back(shares[i].first);
  return ranks;
}

bool needs_fixed_push_order(const placement_plan& plan) {
  return std::count_if(plan.nodes.begin(), plan.nodes.end(),
                       [](const planned_node& n) { return n.kind == node_kind::worker; })
         > 1;
}

std::vector<ranked_push> pushes_to_node(const placement_plan& plan, const forward_order& order,
                                        int node) {
  std::vector<int> node_of_shard(plan.keys.shards.size(), -1);
  for (const auto& actor : plan.actors)
    if (actor.role == plan_role::shard && actor.index >= 0
        && static_cast<std::size_t>(actor.index) < node_of_shard.size())
      node_of_shard[static_cast<std::size_t>(actor.index)] = actor.node;
  const auto light = light_ranks(plan, order);
  std::vector<ranked_push> pushes;
  for (const auto& group : plan.keys.groups)
    if (group.shard < node_of_shard.size() && node_of_shard[group.shard] == node) {
      const auto rank = rank_of_keys(static_cast<std::uint32_t>(group.shard), group.keys, order);
      pushes.push_back({rank, group.elements * static_cast<std::int64_t>(sizeof(float)),
                        std::binary_search(light.begin(), light.end(), rank)});
    }
  std::sort(pushes.begin(), pushes.end(),
            [](const ranked_push& a, const ranked_push& b) { return a.rank < b.rank; });
  return pushes;
}

std::size_t held_pushes(const std::vector<ranked_push>& pushes, std::int64_t held_bytes) {
  std::size_t held = 0;
  std::int64_t holding = 0;
  for (auto p = pushes.rbegin(); p != pushes.rend() && p->light && holding + p->bytes <= held_bytes;
       ++p, ++held)
    holding += p->bytes;
  return held;
}

std::vector<std::uint64_t> fixed_push_order(std::vector<ranked_push> pushes,
                                            std::int64_t backward_bytes, std::int64_t held_bytes) {
  std::sort(pushes.begin(), pushes.end(),
            [](const ranked_push& a, const ranked_push& b) { return a.rank < b.rank; });
  for (std::size_t i = 0; i < pushes.size(); ++i) {
    if (pushes[i].rank == unranked || pushes[i].rank == control_rank)
      throw std::invalid_argument("a fixed push order needs every push ranked (push "
                                  + std::to_string(i) + " is not)");
    if (i > 0 && pushes[i].rank == pushes[i - 1].rank)
      throw std::invalid_argument("a fixed push order lists rank " + std::to_string(pushes[i].rank)
                                  + " twice");
    if (pushes[i].bytes < 0)
      throw std::invalid_argument("a fixed push order's push of rank "
                                  + std::to_string(pushes[i].rank) + " has negative bytes");
    if (i > 0 && pushes[i - 1].light && !pushes[i].light)
      throw std::invalid_argument("a fixed push order's light push of rank "
                                  + std::to_string(pushes[i - 1].rank) + " is below rank "
                                  + std::to_string(pushes[i].rank)
                                  + ", which is not light (light pushes are the last layers')");
  }
  // The light last layers held for the end (the rest go as the others do).
  const std::size_t first_held = pushes.size() - held_pushes(pushes, held_bytes);
  // The last layers below those while their bytes are short of what backward's time carries.
  std::size_t first_late = first_held;
  std::int64_t carried = 0;
  while (first_late > 0 && carried < backward_bytes)
    carried += pushes[--first_late].bytes;
  std::vector<std::uint64_t> ranks;
  ranks.reserve(pushes.size());
  for (std::size_t i = first_held; i-- > first_late;)
    ranks.push_back(pushes[i].rank);
  for (std::size_t i = 0; i < first_late; ++i)
    ranks.push_back(pushes[i].rank);
  for (std::size_t i = first_held; i < pushes.size(); ++i)
    ranks.push_back(pushes[i].rank);
  return ranks;
}

} // namespace troupe
