// Placement plans of small cluster runs, for the tests of what a node works out from its plan.
#pragma once

#include <troupe/graph/placement.hpp>

#include "tests/actors/synthetic_job.hpp"

namespace troupe::test {

/// The data a small MLP's plan is made for: 28x28 examples of 10 classes, 64 of each split.
inline const data_facts small_facts{{1, 28, 28}, 10, 64, 64};

/// An MLP over `servers` server and `workers` worker processes: one compute per worker, a shard
/// per server, keys sliced at 64 KiB.
inline placement_plan cluster_plan(int servers, int workers) {
  auto job = synthetic_job("mlp", 64);
  job.topology.workers = workers;
  job.shards = servers;
  job.nodes.servers = servers;
  job.nodes.workers = workers;
  job.topology.keys = key_plan_options{64 << 10, 0};
  return plan_placement(job, small_facts);
}

} // namespace troupe::test
