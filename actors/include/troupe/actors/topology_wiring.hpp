// The training topology as actor wiring: spawns the parameter shards of a key plan and routes
// each compute actor's pushes to them, directly or through aggregators. The training session
// uses it with real compute actors; troupe_bench_messaging uses it with fixed-cost stand-ins,
// so the benchmark measures exactly the wiring that trains.
//
//   bsp:          all workers -> aggregator (sums, in worker order) -> shard -> all workers
//   async:        each worker -> shard directly; each push applied on arrival
//   ssp:          async, but a worker may be at most `staleness` steps ahead of the slowest
//   hierarchical: workers -> per-machine aggregator -> global aggregator -> shard
//   backup:       bsp whose aggregator takes the first workers - backup_workers contributions
//
// There is one aggregator chain per shard, so shards (and their sums) work in parallel.
#pragma once

#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <troupe/actors/compute_actor.hpp>
#include <troupe/actors/param_shard_actor.hpp>
#include <troupe/actors/timeouts.hpp>
#include <troupe/graph/config/key_assignment.hpp>
#include <troupe/graph/job.hpp>
#include <troupe/graph/layer.hpp>

namespace troupe {

/// One parameter shard per shard of `plan`, its keys cut from `parameters` (by slot; each
/// shard copies its initial values). `options.workers` and `options.staleness` are set from
/// the topology. Source indices of the returned routes are 0.
std::vector<shard_route> spawn_shards(caf::actor_system& system, const key_plan& plan,
                                      const std::vector<parameter*>& parameters,
                                      shard_options options, const topology_options& topology);

/// Each worker's routes, in the order of `shards` (so push_group::shard indexes them too):
/// the shards themselves (async, ssp) or the aggregators in front of them. Every aggregator
/// spawned is appended to `spawned`, for shutdown.
std::vector<std::vector<shard_route>> route_workers(caf::actor_system& system,
                                                    const std::vector<shard_route>& shards,
                                                    const topology_options& topology,
                                                    std::vector<caf::actor>& spawned,
                                                    const request_timeouts& timeouts = {});

} // namespace troupe
