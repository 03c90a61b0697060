// The push side of a plan, spawned: shards start from the given values (slices included) under
// the plan's key names, and each topology puts the plan's actors between workers and shards.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/topology_wiring.hpp>
#include <troupe/cluster/local_node.hpp>

using namespace troupe;

namespace {

// big.weight (10x10, values 0..99) and small.bias (7, 8, 9), planned over `shards` shards.
struct two_parameters {
  std::vector<planned_parameter> params{{"big.weight", {10, 10}, 100, true},
                                        {"small.bias", {3}, 3, false}};
  std::vector<tensor> initial{tensor({10, 10}), tensor::from_values({3}, {7, 8, 9})};
  two_parameters() {
    for (int i = 0; i < 100; ++i)
      initial[0].data()[i] = static_cast<float>(i);
  }
  placement_plan plan(topology_kind mode, int workers, int shards, int machines = 1,
                      key_plan_options keys = {}, cluster_nodes nodes = {}) const {
    training_job job;
    job.nodes = nodes;
    job.shards = shards;
    job.topology.workers = workers;
    use_preset(job.topology, mode, mode == topology_kind::hierarchical ? machines : -1);
    job.topology.keys = keys;
    return plan_placement(job, data_facts{}, params);
  }
};

struct spawned_actors {
  std::vector<push_target_actor> all;
  spawn_observer observer() {
    return [this](const push_target_actor& a, const planned_actor&, const push_target_actor&) {
      all.push_back(a);
    };
  }
  ~spawned_actors() {
    for (auto& a : all)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
};

} // namespace

TEST_CASE("spawn_push_side cuts each shard's keys out of the start values") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  two_parameters p;
  auto plan =
    p.plan(topology_kind::async, 1, 2, 1, key_plan_options{192, 0}); // big: 3 slices (32, 32, 36)
  spawned_actors spawned;
  auto targets = spawn_push_side(sys, plan, p.initial, {}, spawned.observer());
  CHECK(spawned.all.size() == 2); // async: shards only
  auto shards = shard_routes(plan, targets);
  REQUIRE(shards.size() == 2);
  int slices = 0;
  std::int64_t elements = 0;
  for (const auto& route : shards)
    self->request(route.shard, std::chrono::seconds(10), pull_atom::value, deadline{})
      .receive(
        [&](weight_set& ws) {
          REQUIRE(ws.weights.size() == route.keys.size());
          REQUIRE_FALSE(ws.weights.empty());
          for (std::size_t i = 0; i < ws.keys.size(); ++i) {
            const auto& key = route.keys[ws.keys[i]];
            const auto& source = p.initial[key.slot];
            REQUIRE(ws.weights[i].numel() == key.length);
            if (key.whole)
              CHECK(ws.weights[i].shape() == source.shape());
            else
              ++slices;
            elements += key.length;
            for (std::int64_t e = 0; e < key.length; ++e)
              CHECK(ws.weights[i].data()[e] == source.data()[key.offset + e]);
          }
        },
        [](caf::error& e) { FAIL(error_text(e)); });
  CHECK(slices == 3);
  CHECK(elements == 103);
  auto wrong = p.initial;
  wrong[1] = tensor({4});
  CHECK_THROWS_WITH(spawn_push_side(sys, plan, wrong, {}, {}),
                    Catch::Contains("small.bias has shape [4], the plan says [3]"));
}

TEST_CASE("routes_of puts shards, aggregators or two aggregator levels in front") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  two_parameters p;
  spawned_actors spawned;

  auto async = p.plan(topology_kind::async, 4, 2);
  auto direct_targets = spawn_push_side(sys, async, p.initial, {}, spawned.observer());
  CHECK(spawned.all.size() == 2);
  auto direct = routes_of(async, direct_targets, 3);
  auto shards = shard_routes(async, direct_targets);
  REQUIRE(direct.size() == 2);
  CHECK(direct[1].shard == shards[1].shard);
  CHECK(direct[1].source_index == 3);

  auto bsp = p.plan(topology_kind::bsp, 4, 2);
  auto bsp_targets = spawn_push_side(sys, bsp, p.initial, {}, spawned.observer());
  CHECK(spawned.all.size() == 2 + 4); // plus two shards and one aggregator per shard
  auto first = routes_of(bsp, bsp_targets, 0), last = routes_of(bsp, bsp_targets, 3);
  CHECK(first[0].shard != shard_routes(bsp, bsp_targets)[0].shard);
  CHECK(first[0].shard == last[0].shard);
  CHECK(routes_of(bsp, bsp_targets, 2)[0].source_index == 2);

  auto hier = p.plan(topology_kind::hierarchical, 4, 2, 2);
  auto hier_targets = spawn_push_side(sys, hier, p.initial, {}, spawned.observer());
  CHECK(spawned.all.size() == 6 + 2 * (1 + 1 + 2)); // per shard: shard, global, 2 machines
  CHECK(routes_of(hier, hier_targets, 0)[0].shard == routes_of(hier, hier_targets, 1)[0].shard);
  CHECK(routes_of(hier, hier_targets, 1)[0].shard != routes_of(hier, hier_targets, 2)[0].shard);
  CHECK(routes_of(hier, hier_targets, 3)[0].source_index == 1); // 2nd worker of machine 1
}

TEST_CASE("one node's push side: its own actors, stand-ins for the targets elsewhere") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  two_parameters p;
  // Hierarchical, 4 workers on 2 worker processes (one machine each), 2 shards on 2 servers.
  auto plan = p.plan(topology_kind::hierarchical, 4, 2, 2, {}, cluster_nodes{2, 2});
  REQUIRE(plan.nodes.size() == 5);
  auto name_of = [&](std::size_t i) { return plan.actors[i].name; };

  // Server 1 (node 2): shard_1 and the aggregator in front of it; pushes enter at the aggregator.
  spawned_actors server;
  std::vector<std::string> server_names;
  auto server_side = spawn_push_side_of_node(
    sys, plan, 2, {}, p.initial, {},
    [&](const push_target_actor& a, const planned_actor& entry, const push_target_actor& d) {
      server.observer()(a, entry, d);
      server_names.push_back(entry.name);
    });
  CHECK(server_names == std::vector<std::string>{"shard_1", "aggregator_1"});
  const auto server_entries = entry_points(plan, 2);
  REQUIRE(server_entries.size() == 1);
  CHECK(server_entries[0].first == 1);
  CHECK(name_of(server_entries[0].second) == "aggregator_1");
  CHECK(server_side.targets[server_entries[0].second]);
  // The shard spawned here is there with its own type too; the aggregator and the actors of
  // other nodes are not.
  for (std::size_t i = 0; i < plan.actors.size(); ++i)
    CHECK(static_cast<bool>(server_side.shards[i]) == (name_of(i) == "shard_1"));

  // Worker process 1 (node 4): machine 1's aggregators, each pushing to a stand-in for the
  // global aggregator of its shard on a server.
  std::vector<std::size_t> asked;
  spawned_actors stand_ins, worker;
  auto remote = [&](std::size_t index) {
    asked.push_back(index);
    auto fake = sys.spawn([](push_target_actor::pointer) -> push_target_actor::behavior_type {
      return {[](push_atom, gradient_push&) { return weight_set{}; },
              [](rewind_atom, std::int64_t, std::int32_t, deadline) -> caf::result<weight_set> {
                return caf::make_error(caf::sec::unexpected_message);
              },
              [](pull_atom, deadline) { return weight_set{}; }};
    });
    stand_ins.all.push_back(fake);
    return fake;
  };
  std::vector<std::pair<std::string, push_target_actor>> downstream_of;
  auto worker_side = spawn_push_side_of_node(
    sys, plan, 4, remote, p.initial, {},
    [&](const push_target_actor& a, const planned_actor& entry, const push_target_actor& d) {
      worker.observer()(a, entry, d);
      downstream_of.emplace_back(entry.name, d);
    });
  REQUIRE(asked.size() == 2);
  CHECK(name_of(asked[0]) == "aggregator_0");
  CHECK(name_of(asked[1]) == "aggregator_1");
  REQUIRE(downstream_of.size() == 2);
  CHECK(downstream_of[0].first == "machine_aggregator_1_0");
  CHECK(downstream_of[0].second == stand_ins.all[0]);
  CHECK(downstream_of[1].first == "machine_aggregator_1_1");
  CHECK(downstream_of[1].second == stand_ins.all[1]);
  // Computes 2 and 3 (on this node) push to their machine's aggregators.
  const auto routes = routes_of(plan, worker_side.targets, 3);
  REQUIRE(routes.size() == 2);
  CHECK(caf::actor_cast<caf::actor>(routes[0].shard) == worker.all[0]);
  CHECK(entry_points(plan, 4).empty()); // nothing pushes into a worker process

  // Without stand-ins a node that pushes elsewhere cannot be wired.
  CHECK_THROWS_WITH(
    spawn_push_side_of_node(sys, plan, 3, {}, p.initial, {}, {}),
    Catch::Contains("machine_aggregator_0_0 pushes to aggregator_0 on another node"));
}

TEST_CASE("in BSP the aggregators are a server's entry points, in async the shards") {
  two_parameters p;
  auto bsp = p.plan(topology_kind::bsp, 2, 2, 1, {}, cluster_nodes{1, 2});
  const auto bsp_entries = entry_points(bsp, 1);
  REQUIRE(bsp_entries.size() == 2);
  CHECK(bsp.actors[bsp_entries[0].second].name == "aggregator_0");
  CHECK(bsp.actors[bsp_entries[1].second].name == "aggregator_1");
  auto async = p.plan(topology_kind::async, 2, 2, 1, {}, cluster_nodes{2, 1});
  const auto server0 = entry_points(async, 1), server1 = entry_points(async, 2);
  REQUIRE(server0.size() == 1);
  REQUIRE(server1.size() == 1);
  CHECK(async.actors[server0[0].second].name == "shard_0");
  CHECK(async.actors[server1[0].second].name == "shard_1");
}
