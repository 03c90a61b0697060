// The checks of a compute actor's wiring before it is spawned, which actor spawn_compute
// spawns (the compute actor, or the compute stand-in: options.stand_in), and the push tracker
// that tells backward's ready slots into whole push groups.
#include "actors/compute_stand_in_state.hpp"
#include "actors/compute_state.hpp"

#include <set>
#include <stdexcept>

#include <troupe/kernels/threading.hpp>

namespace troupe::compute_parts {

// Every key of every route in exactly one group, every key inside the replica's parameters.
void check_wiring(model& replica, const compute_wiring& wiring) {
  if (wiring.shards.empty())
    throw std::invalid_argument("compute: no parameter shard to talk to");
  auto& params = replica.parameters();
  std::vector<std::int64_t> elements(params.size(), 0);
  std::vector<std::vector<int>> covered(wiring.shards.size());
  for (std::size_t r = 0; r < wiring.shards.size(); ++r) {
    covered[r].assign(wiring.shards[r].keys.size(), 0);
    for (const auto& key : wiring.shards[r].keys)
      if (key.slot >= params.size() || key.offset < 0 || key.length <= 0
          || key.offset + key.length > params[key.slot]->value.numel())
        throw std::invalid_argument("compute: route " + std::to_string(r)
                                    + " has a key outside "
                                      "the model's parameters (slot "
                                    + std::to_string(key.slot) + ")");
    for (const auto& key : wiring.shards[r].keys)
      elements[key.slot] += key.length;
  }
  for (std::size_t slot = 0; slot < params.size(); ++slot)
    if (elements[slot] != params[slot]->value.numel())
      throw std::invalid_argument(
        "compute: the routes' keys cover " + std::to_string(elements[slot]) + " of the "
        + std::to_string(params[slot]->value.numel()) + " elements of " + params[slot]->name);
  for (const auto& g : wiring.groups) {
    if (g.shard >= wiring.shards.size() || g.keys.empty())
      throw std::invalid_argument("compute: a push group names route " + std::to_string(g.shard)
                                  + " of " + std::to_string(wiring.shards.size())
                                  + " or has no keys");
    for (auto k : g.keys) {
      if (k >= covered[g.shard].size())
        throw std::invalid_argument("compute: a push group names key " + std::to_string(k)
                                    + " of route " + std::to_string(g.shard) + ", which has "
                                    + std::to_string(covered[g.shard].size()));
      ++covered[g.shard][k];
    }
  }
  for (std::size_t r = 0; r < covered.size(); ++r)
    for (std::size_t k = 0; k < covered[r].size(); ++k)
      if (covered[r][k] != 1)
        throw std::invalid_argument("compute: key " + std::to_string(k) + " of route "
                                    + std::to_string(r) + " is in " + std::to_string(covered[r][k])
                                    + " push groups, expected exactly 1");
}

// Spawns `behavior` with `args` as the options say: detached or not, a detached one bound to
// options.cpus.
template <class Pointer, class Behavior, class... Ts, class... Args>
local_compute_actor spawn_as(caf::actor_system& system, const compute_spawn_options& options,
                             Behavior (*behavior)(Pointer, Ts...), Args&&... args) {
  if (options.detached && !options.cpus.empty())
    // A detached actor builds its behaviour on its own thread: bound there, before any kernel.
    return system.spawn<caf::detached>(
      [cpus = options.cpus, behavior](Pointer self, Ts... a) {
        bind_this_thread(cpus);
        return behavior(self, std::move(a)...);
      },
      std::forward<Args>(args)...);
  if (options.detached)
    return system.spawn<caf::detached>(behavior, std::forward<Args>(args)...);
  return system.spawn(behavior, std::forward<Args>(args)...);
}

} // namespace troupe::compute_parts

namespace troupe {

using namespace compute_parts;

local_compute_actor spawn_compute(caf::actor_system& system, std::unique_ptr<model> replica,
                                  compute_wiring wiring, compute_spawn_options options) {
  if (!replica)
    throw std::invalid_argument("compute: no model replica");
  check_wiring(*replica, wiring);
  if (!wiring.train_loader || !wiring.validation_loader)
    throw std::invalid_argument("compute: no training or validation loader");
  if (options.stand_in.step.count() < 0 || options.stand_in.samples < 0)
    throw std::invalid_argument("compute: a stand-in needs a step time and samples >= 0");
  std::shared_ptr<model> shared(std::move(replica));
  if (options.stand_in.active())
    return spawn_as(system, options, stand_in_compute, std::move(shared), std::move(wiring),
                    options.stand_in);
  return spawn_as(system, options, compute, std::move(shared), std::move(wiring));
}

push_tracker::push_tracker(const std::vector<shard_route>& routes,
                           const std::vector<push_group>& groups, std::size_t slots)
    : groups_of_slot_(slots) {
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::set<std::size_t> waits_on;
    for (auto k : groups[g].keys)
      waits_on.insert(routes[groups[g].shard].keys[k].slot);
    for (auto slot : waits_on)
      groups_of_slot_[slot].push_back(g);
    slots_per_group_.push_back(waits_on.size());
  }
  missing_ = slots_per_group_;
}

} // namespace troupe
