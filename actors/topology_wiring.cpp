// Shards come before the aggregators that push to them in plan.actors, and a global
// aggregator before its machine aggregators, so every downstream handle exists when the actor
// that pushes to it is spawned.
#include <troupe/actors/topology_wiring.hpp>

#include <stdexcept>
#include <string>

namespace troupe {

namespace {

param_shard_actor spawn_planned_shard(caf::actor_system& system, const placement_plan& plan,
                                      const planned_actor& a, const std::vector<tensor>& initial,
                                      const optimizer_options& optimizer) {
  std::vector<shard_key> keys;
  for (auto k : a.keys) {
    const auto& key = plan.key_table.at(k);
    const auto& param = plan.parameters.at(key.slice.slot);
    keys.push_back(shard_key{key.name, key_view(initial[key.slice.slot], key.slice),
                             param.weight_decay});
  }
  shard_options options;
  options.sgd = optimizer.sgd;
  options.schedule = optimizer.schedule;
  options.workers = a.workers;
  options.staleness = a.staleness;
  return spawn_param_shard(system, std::move(keys), std::move(options));
}

} // namespace

push_targets spawn_push_side(caf::actor_system& system, const placement_plan& plan,
                             const std::vector<tensor>& initial,
                             const optimizer_options& optimizer,
                             const request_timeouts& timeouts, const spawn_observer& spawned) {
  if (initial.size() != plan.parameters.size())
    throw std::invalid_argument("wiring: " + std::to_string(initial.size())
                                + " start values for the plan's "
                                + std::to_string(plan.parameters.size()) + " parameters");
  for (std::size_t slot = 0; slot < initial.size(); ++slot)
    if (initial[slot].shape() != plan.parameters[slot].shape)
      throw std::invalid_argument("wiring: start value of " + plan.parameters[slot].name
                                  + " has shape " + shape_string(initial[slot].shape())
                                  + ", the plan says " + shape_string(plan.parameters[slot].shape));
  push_targets targets(plan.actors.size());
  for (std::size_t i = 0; i < plan.actors.size(); ++i) {
    const auto& a = plan.actors[i];
    caf::actor downstream;
    if (a.role == plan_role::shard) {
      targets[i] = spawn_planned_shard(system, plan, a, initial, optimizer);
    } else if (a.role == plan_role::aggregator || a.role == plan_role::machine_aggregator) {
      const auto& down = plan.push_route(i, a.shard);
      if (!targets[down.to])
        throw std::invalid_argument("wiring: " + a.name + " pushes to "
                                    + plan.actors[down.to].name + ", listed after it");
      downstream = caf::actor_cast<caf::actor>(targets[down.to]);
      targets[i] = spawn_aggregator(system, targets[down.to],
                                    aggregator_options{a.sources, a.need, a.deterministic,
                                                       a.position, timeouts});
    } else {
      continue;
    }
    if (spawned)
      spawned(caf::actor_cast<caf::actor>(targets[i]), a, downstream);
  }
  return targets;
}

std::vector<shard_route> routes_of(const placement_plan& plan, const push_targets& targets,
                                   int worker) {
  std::vector<shard_route> routes;
  for (std::size_t k = 0; k < plan.keys.shards.size(); ++k) {
    const auto& r = plan.gradient_route(worker, static_cast<int>(k));
    routes.push_back(shard_route{targets.at(r.to), plan.keys.shards[k], r.source});
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
