// One node's part of a plan, spawned: a worker node's part limited to some of its ranks spawns
// those ranks' loaders and computes (and the node's validation loader) only, and gives them up
// by name while the rest runs on; a part whose ranks cannot run apart is refused.
#include <catch2/catch.hpp>

#include <algorithm>

#include <caf/all.hpp>

#include <troupe/actors/node_part.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/io/dataset.hpp>

#include "tests/actors/synthetic_job.hpp"

using namespace troupe;

namespace {

const data_facts facts{{1, 28, 28}, 10, 64, 64};

// An MLP over one server and two worker processes of two computes each (bsp, or hierarchical
// with a machine per worker process).
training_job two_by_two(bool hierarchical) {
  auto job = test::synthetic_job("mlp", 64);
  job.train_batches.batch_size = 8;
  job.topology.workers = 4;
  job.nodes.servers = 1;
  job.nodes.workers = 2;
  if (hierarchical) {
    job.topology.machines = 2;
    job.topology.levels = {aggregation_level{aggregation_scope::machine},
                           aggregation_level{aggregation_scope::all}};
  }
  return job;
}

int worker_node(const placement_plan& plan, int rank) {
  for (std::size_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == node_kind::worker && plan.nodes[n].rank == rank)
      return static_cast<int>(n);
  return -1;
}

std::vector<std::string> names_of(const node_part& part) {
  std::vector<std::string> names;
  for (const auto& [actor, name] : part.spawned)
    names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

// Proxies for the actors elsewhere (the servers' aggregators): stand-ins that answer nothing
// of interest, ended with the part.
push_target_actor stand_in(caf::actor_system& sys) {
  return sys.spawn([](push_target_actor::pointer) -> push_target_actor::behavior_type {
    return {[](push_atom, gradient_push&) { return weight_set{}; },
            [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
              return caf::make_error(caf::sec::unexpected_message);
            },
            [](pull_atom, deadline) { return weight_set{}; }};
  });
}

} // namespace

TEST_CASE("a worker node's part limited to some ranks spawns only theirs, and gives them up by "
          "name",
          "[actors][node_part]") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  const auto job = two_by_two(false);
  const auto plan = plan_placement(job, facts);
  const auto spec = model_of(job, facts);
  node_data data{open_dataset(job.train_data), open_dataset(job.validation_data)};
  node_part_options options;
  options.node = worker_node(plan, 0);
  options.ranks = {1};
  options.adopted = true;
  options.remote.push_target = [&](std::size_t) { return stand_in(sys); };
  options.metrics = sys.spawn([](metrics_sink_actor::pointer) -> metrics_sink_actor::behavior_type {
    return {[](batch_report&) {}, [](phase_report&) {}, [](flush_atom) { return true; }};
  });
  node_part part;
  spawn_node_part(sys, job, plan, spec, {}, data, options, part);
  REQUIRE(part.computes.size() == 1);
  CHECK(part.computes.front().first == 1);
  const auto spawned = names_of(part);
  CHECK(std::count(spawned.begin(), spawned.end(), "compute_1") == 1);
  CHECK(std::count(spawned.begin(), spawned.end(), "loader_1") == 1);
  CHECK(std::count(spawned.begin(), spawned.end(), "compute_0") == 0);
  CHECK(std::count(spawned.begin(), spawned.end(), "loader_0") == 0);
  CHECK(std::count(spawned.begin(), spawned.end(), "validation_loader_0") == 1);
  part.shut_down_named({"compute_1", "loader_1"});
  CHECK(part.computes.empty());
  const auto left = names_of(part);
  CHECK(std::count(left.begin(), left.end(), "compute_1") == 0);
  CHECK(std::count(left.begin(), left.end(), "loader_1") == 0);
  CHECK(std::count(left.begin(), left.end(), "validation_loader_0") == 1);
  part.shut_down();
  caf::anon_send_exit(options.metrics, caf::exit_reason::user_shutdown);
}

TEST_CASE("ranks apart from their node are refused where a machine's aggregators sum them, or "
          "with no node",
          "[actors][node_part]") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  const auto job = two_by_two(true);
  const auto plan = plan_placement(job, facts);
  const auto spec = model_of(job, facts);
  node_part_options options;
  options.node = worker_node(plan, 0);
  options.ranks = {1};
  node_part part;
  CHECK_THROWS_WITH(spawn_node_part(sys, job, plan, spec, {}, {}, options, part),
                    Catch::Contains("worker_0 holds its machine's aggregators, which sum its ranks "
                                    "in process: its ranks do not run apart"));
  CHECK(part.spawned.empty());
  options.node = -1;
  CHECK_THROWS_WITH(spawn_node_part(sys, job, plan, spec, {}, {}, options, part),
                    Catch::Contains("ranks apart from their node need that node"));
}
