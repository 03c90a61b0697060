// Machines in a hierarchy get contiguous worker ranges, [m*W/M, (m+1)*W/M), the same split
// graph/config/job_plan.cpp draws.
#include <troupe/actors/topology_wiring.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <troupe/actors/aggregator_actor.hpp>

namespace troupe {

namespace {

int first_worker_of(int machine, int workers, int machines) {
  return static_cast<int>(static_cast<std::int64_t>(machine) * workers / machines);
}

} // namespace

std::vector<shard_route> spawn_shards(caf::actor_system& system, const key_plan& plan,
                                      const std::vector<parameter*>& parameters,
                                      shard_options options, const topology_options& topology) {
  options.workers = topology.workers;
  options.staleness = topology.mode == topology_kind::ssp ? topology.staleness : -1;
  std::vector<shard_route> routes;
  for (const auto& shard_keys : plan.shards) {
    std::vector<shard_key> keys;
    for (const auto& key : shard_keys) {
      if (key.slot >= parameters.size())
        throw std::invalid_argument("topology: key plan names parameter "
                                    + std::to_string(key.slot) + " of "
                                    + std::to_string(parameters.size()));
      const auto* p = parameters[key.slot];
      keys.push_back(shard_key{key_name(p->name, key), key_view(p->value, key), p->weight_decay});
    }
    routes.push_back(shard_route{spawn_param_shard(system, std::move(keys), options), shard_keys, 0});
  }
  return routes;
}

std::vector<std::vector<shard_route>> route_workers(caf::actor_system& system,
                                                    const std::vector<shard_route>& shards,
                                                    const topology_options& t,
                                                    std::vector<caf::actor>& spawned,
                                                    const request_timeouts& timeouts) {
  const int n = t.workers;
  std::vector<std::vector<shard_route>> routes(static_cast<std::size_t>(n));
  for (const auto& shard : shards) {
    if (!synchronous(t.mode)) {
      for (int w = 0; w < n; ++w)
        routes[w].push_back(shard_route{shard.shard, shard.keys, w});
      continue;
    }
    const int machines = t.mode == topology_kind::hierarchical ? std::clamp(t.machines, 1, n) : 1;
    aggregator_options top{t.mode == topology_kind::hierarchical ? machines : n, 0, t.deterministic, 0,
                           timeouts};
    if (t.mode == topology_kind::backup)
      top.need = n - t.backup_workers;
    auto global = spawn_aggregator(system, shard.shard, top);
    spawned.push_back(caf::actor_cast<caf::actor>(global));
    for (int m = 0; m < machines; ++m) {
      const int begin = first_worker_of(m, n, machines), end = first_worker_of(m + 1, n, machines);
      push_target_actor front = global;
      if (t.mode == topology_kind::hierarchical) {
        auto machine = spawn_aggregator(system, global,
                                        aggregator_options{end - begin, 0, t.deterministic, m,
                                                           timeouts});
        spawned.push_back(caf::actor_cast<caf::actor>(machine));
        front = machine;
      }
      for (int w = begin; w < end; ++w)
        routes[w].push_back(shard_route{front, shard.keys, machines > 1 ? w - begin : w});
    }
  }
  return routes;
}

} // namespace troupe
