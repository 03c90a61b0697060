// Shards come before the aggregators that push to them in plan.actors, and a global
// aggregator before its machine aggregators, so every downstream handle exists when the actor
// that pushes to it is spawned.
#include <troupe/actors/topology_wiring.hpp>

#include <algorithm>

#include <stdexcept>
#include <string>
#include <troupe/actors/compressed_hop.hpp>

namespace troupe {

namespace {

param_shard_actor spawn_planned_shard(caf::actor_system& system, const placement_plan& plan,
                                      const planned_actor& a, const std::vector<tensor>& initial,
                                      const optimizer_options& optimizer,
                                      const push_side_options& side) {
  std::vector<shard_key> keys;
  for (auto k : a.keys) {
    const auto& key = plan.key_table.at(k);
    const auto& param = plan.parameters.at(key.slice.slot);
    keys.push_back(
      shard_key{key.name, key_view(initial[key.slice.slot], key.slice), param.weight_decay});
  }
  shard_options options;
  options.optimizer = static_cast<const update_rule&>(optimizer);
  options.schedule = optimizer.schedule;
  options.workers = a.workers;
  options.staleness = a.staleness;
  options.step_limit = side.step_limit;
  options.timeline = side.timeline;
  options.track = a.name + side.track_suffix;
  return spawn_param_shard(system, std::move(keys), std::move(options));
}

} // namespace

push_targets spawn_push_side(caf::actor_system& system, const placement_plan& plan,
                             const std::vector<tensor>& initial, const optimizer_options& optimizer,
                             const spawn_observer& spawned, const push_side_options& options) {
  return spawn_push_side_of_node(system, plan, -1, {}, initial, optimizer, spawned, options)
    .targets;
}

push_side spawn_push_side_of_node(caf::actor_system& system, const placement_plan& plan, int node,
                                  const remote_push_target& remote,
                                  const std::vector<tensor>& initial,
                                  const optimizer_options& optimizer, const spawn_observer& spawned,
                                  const push_side_options& options) {
  // node -1: every actor (one process).
  auto here = [&](std::size_t i) { return node < 0 || plan.actors[i].node == node; };
  // Start values matter only to a node that holds shards (a worker may pass none).
  const auto shards = plan.actors_of(plan_role::shard);
  const bool holds_shards = std::any_of(shards.begin(), shards.end(), here);
  if (holds_shards && initial.size() != plan.parameters.size())
    throw std::invalid_argument("wiring: " + std::to_string(initial.size())
                                + " start values for the plan's "
                                + std::to_string(plan.parameters.size()) + " parameters");
  for (std::size_t slot = 0; holds_shards && slot < initial.size(); ++slot)
    if (initial[slot].shape() != plan.parameters[slot].shape)
      throw std::invalid_argument("wiring: start value of " + plan.parameters[slot].name
                                  + " has shape " + shape_string(initial[slot].shape())
                                  + ", the plan says " + shape_string(plan.parameters[slot].shape));
  push_side side{push_targets(plan.actors.size()),
                 std::vector<param_shard_actor>(plan.actors.size()),
                 std::vector<aggregator_actor>(plan.actors.size()),
                 std::vector<compressing_receiver_actor>(plan.actors.size())};
  auto& targets = side.targets;
  // Stand-ins first, for every target on another node that an actor here pushes to.
  for (const auto& r : plan.routes) {
    if (is_push(r.carries) && here(r.from) && !here(r.to) && !targets[r.to]) {
      if (!remote)
        throw std::invalid_argument("wiring: " + plan.actors[r.from].name + " pushes to "
                                    + plan.actors[r.to].name
                                    + " on another node, and no proxy was given");
      targets[r.to] = remote(r.to);
    }
  }
  for (std::size_t i = 0; i < plan.actors.size(); ++i) {
    const auto& a = plan.actors[i];
    push_target_actor downstream;
    if (!here(i)) {
      continue;
    } else if (a.role == plan_role::shard) {
      side.shards[i] = spawn_planned_shard(system, plan, a, initial, optimizer, options);
      targets[i] = side.shards[i];
    } else if (a.role == plan_role::aggregator || a.role == plan_role::machine_aggregator) {
      const auto& down = plan.push_route(i, a.shard);
      if (!targets[down.to])
        throw std::invalid_argument("wiring: " + a.name + " pushes to " + plan.actors[down.to].name
                                    + ", listed after it");
      downstream = targets[down.to];
      auto to = down.compression.active()
                  ? spawn_compressing_sender(system, targets[down.to], down.compression,
                                             a.name + " -> " + plan.actors[down.to].name)
                  : targets[down.to];
      aggregator_options aggregating{a.sources, a.need, a.deterministic, a.position,
                                     options.rewindable};
      aggregating.timeline = options.timeline;
      aggregating.track = a.name + options.track_suffix;
      side.aggregators[i] = spawn_aggregator(system, to, std::move(aggregating));
      targets[i] = side.aggregators[i];
    } else {
      continue;
    }
    // A compressed hop into this actor: its receiving end stands in front of it.
    for (const auto& r : plan.routes)
      if (r.to == i && is_push(r.carries) && r.compression.active()) {
        const auto inner = targets[i];
        side.receivers[i] =
          spawn_compressing_receiver(system, inner, r.compression, "the hop into " + a.name);
        targets[i] = side.receivers[i];
        break;
      }
    if (spawned)
      spawned(targets[i], a, downstream);
  }
  return side;
}

std::vector<std::pair<std::uint32_t, std::size_t>> entry_points(const placement_plan& plan,
                                                                int node) {
  std::vector<std::pair<std::uint32_t, std::size_t>> entries;
  for (const auto& r : plan.routes) {
    if (!is_push(r.carries) || plan.actors[r.to].node != node || plan.actors[r.from].node == node)
      continue;
    const std::pair<std::uint32_t, std::size_t> entry{static_cast<std::uint32_t>(r.shard), r.to};
    if (std::find(entries.begin(), entries.end(), entry) == entries.end())
      entries.push_back(entry);
  }
  return entries;
}

std::vector<shard_route> routes_of(const placement_plan& plan, const push_targets& targets,
                                   int rank) {
  std::vector<shard_route> routes;
  for (std::size_t k = 0; k < plan.keys.shards.size(); ++k) {
    const auto& r = plan.gradient_route(rank, static_cast<int>(k));
    routes.push_back(shard_route{targets.at(r.to), plan.keys.shards[k], r.source});
  }
  return routes;
}

std::vector<shard_route> compressing_routes(caf::actor_system& system, const placement_plan& plan,
                                            std::vector<shard_route> routes, int rank) {
  for (std::size_t k = 0; k < routes.size(); ++k) {
    const auto& r = plan.gradient_route(rank, static_cast<int>(k));
    if (r.compression.active())
      routes[k].shard =
        spawn_compressing_sender(system, routes[k].shard, r.compression,
                                 plan.actors[r.from].name + " -> " + plan.actors[r.to].name);
  }
  return routes;
}

std::vector<shard_route> shard_routes(const placement_plan& plan, const push_targets& targets) {
  std::vector<shard_route> routes;
  for (auto i : plan.actors_of(plan_role::shard)) {
    const auto k = static_cast<std::size_t>(plan.actors[i].shard);
    routes.push_back(shard_route{targets.at(i), plan.keys.shards.at(k), 0});
  }
  return routes;
}

} // namespace troupe
