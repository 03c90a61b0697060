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
                      key_plan_options keys = {}) const {
    training_job job;
    job.shards = shards;
    job.topology.mode = mode;
    job.topology.workers = workers;
    job.topology.machines = machines;
    job.topology.keys = keys;
    return plan_placement(job, data_facts{}, params);
  }
};

struct spawned_actors {
  std::vector<caf::actor> all;
  spawn_observer observer() {
    return [this](const caf::actor& a, const planned_actor&, const caf::actor&) {
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
  auto plan = p.plan(topology_kind::async, 1, 2, 1, key_plan_options{160, 0});  // big: 3 slices
  spawned_actors spawned;
  auto targets = spawn_push_side(sys, plan, p.initial, {}, {}, spawned.observer());
  CHECK(spawned.all.size() == 2);  // async: shards only
  auto shards = shard_routes(plan, targets);
  REQUIRE(shards.size() == 2);
  int slices = 0;
  std::int64_t elements = 0;
  for (const auto& route : shards)
    self->request(route.shard, std::chrono::seconds(10), pull_atom::value)
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
  CHECK_THROWS_WITH(spawn_push_side(sys, plan, wrong, {}, {}, {}),
                    Catch::Contains("small.bias has shape [4], the plan says [3]"));
}

TEST_CASE("routes_of puts shards, aggregators or two aggregator levels in front") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  two_parameters p;
  spawned_actors spawned;

  auto async = p.plan(topology_kind::async, 4, 2);
  auto direct_targets = spawn_push_side(sys, async, p.initial, {}, {}, spawned.observer());
  CHECK(spawned.all.size() == 2);
  auto direct = routes_of(async, direct_targets, 3);
  auto shards = shard_routes(async, direct_targets);
  REQUIRE(direct.size() == 2);
  CHECK(direct[1].shard == shards[1].shard);
  CHECK(direct[1].source_index == 3);

  auto bsp = p.plan(topology_kind::bsp, 4, 2);
  auto bsp_targets = spawn_push_side(sys, bsp, p.initial, {}, {}, spawned.observer());
  CHECK(spawned.all.size() == 2 + 4);  // plus two shards and one aggregator per shard
  auto first = routes_of(bsp, bsp_targets, 0), last = routes_of(bsp, bsp_targets, 3);
  CHECK(first[0].shard != shard_routes(bsp, bsp_targets)[0].shard);
  CHECK(first[0].shard == last[0].shard);
  CHECK(routes_of(bsp, bsp_targets, 2)[0].source_index == 2);

  auto hier = p.plan(topology_kind::hierarchical, 4, 2, 2);
  auto hier_targets = spawn_push_side(sys, hier, p.initial, {}, {}, spawned.observer());
  CHECK(spawned.all.size() == 6 + 2 * (1 + 1 + 2));  // per shard: shard, global, 2 machines
  CHECK(routes_of(hier, hier_targets, 0)[0].shard == routes_of(hier, hier_targets, 1)[0].shard);
  CHECK(routes_of(hier, hier_targets, 1)[0].shard != routes_of(hier, hier_targets, 2)[0].shard);
  CHECK(routes_of(hier, hier_targets, 3)[0].source_index == 1);  // 2nd worker of machine 1
}
