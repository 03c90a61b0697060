// The topology wiring: shards start from the parameters' own values (slices included), and
// each mode puts the right actors between the workers and the shards.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/topology_wiring.hpp>
#include <troupe/cluster/local_node.hpp>

using namespace troupe;

namespace {

struct two_parameters {
  parameter big{"big.weight", tensor({10, 10}), {}, init_kind::zeros, true};
  parameter small{"small.bias", tensor::from_values({3}, {7, 8, 9}), {}, init_kind::zeros, false};
  std::vector<parameter*> list{&big, &small};
  two_parameters() {
    for (int i = 0; i < 100; ++i)
      big.value.data()[i] = static_cast<float>(i);
  }
};

} // namespace

TEST_CASE("spawn_shards cuts each shard's keys out of the parameters' values") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  two_parameters p;
  auto plan = plan_keys({100, 3}, 2, key_plan_options{160, 0});  // big -> 3 slices of <= 40
  auto shards = spawn_shards(sys, plan, p.list, shard_options{}, topology_options{});
  REQUIRE(shards.size() == 2);
  int slices = 0;
  for (const auto& route : shards) {
    self->request(route.shard, std::chrono::seconds(10), pull_atom::value)
      .receive(
        [&](weight_set& ws) {
          REQUIRE(ws.weights.size() == route.keys.size());
          for (std::size_t i = 0; i < ws.keys.size(); ++i) {
            const auto& key = route.keys[ws.keys[i]];
            const auto& source = p.list[key.slot]->value;
            CHECK(ws.weights[i].numel() == key.length);
            if (key.whole)
              CHECK(ws.weights[i].shape() == source.shape());
            else
              ++slices;
            for (std::int64_t e = 0; e < key.length; ++e)
              CHECK(ws.weights[i].data()[e] == source.data()[key.offset + e]);
          }
        },
        [](caf::error& e) { FAIL(error_text(e)); });
    self->send_exit(route.shard, caf::exit_reason::user_shutdown);
  }
  CHECK(slices == 3);
  auto bad = plan;
  bad.shards[0][0].slot = 5;
  CHECK_THROWS_WITH(spawn_shards(sys, bad, p.list, shard_options{}, topology_options{}),
                    Catch::Contains("names parameter 5 of 2"));
}

TEST_CASE("route_workers puts shards, aggregators or two aggregator levels in front") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  two_parameters p;
  auto plan = plan_keys({100, 3}, 2);
  auto shards = spawn_shards(sys, plan, p.list, shard_options{}, topology_options{});
  std::vector<caf::actor> spawned;
  topology_options t;
  t.workers = 4;

  t.mode = topology_kind::async;
  auto direct = route_workers(sys, shards, t, spawned);
  CHECK(spawned.empty());
  REQUIRE(direct.size() == 4);
  CHECK(direct[3][1].shard == shards[1].shard);
  CHECK(direct[3][1].source_index == 3);

  t.mode = topology_kind::bsp;
  auto bsp = route_workers(sys, shards, t, spawned);
  CHECK(spawned.size() == 2);  // one aggregator per shard
  CHECK(bsp[0][0].shard != shards[0].shard);
  CHECK(bsp[0][0].shard == bsp[3][0].shard);
  CHECK(bsp[2][0].source_index == 2);

  t.mode = topology_kind::hierarchical;
  t.machines = 2;
  spawned.clear();
  auto hier = route_workers(sys, shards, t, spawned);
  CHECK(spawned.size() == 2 * (1 + 2));  // per shard: a global and two machine aggregators
  CHECK(hier[0][0].shard == hier[1][0].shard);
  CHECK(hier[1][0].shard != hier[2][0].shard);
  CHECK(hier[3][0].source_index == 1);  // second worker of the second machine
  for (auto& a : spawned)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  for (auto& r : shards)
    self->send_exit(r.shard, caf::exit_reason::user_shutdown);
}
