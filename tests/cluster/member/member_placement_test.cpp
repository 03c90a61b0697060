// member_placement: what a member takes from its assignment and options, as pure functions.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cluster/member/member_placement.hpp"
#include "tests/cluster/cluster_plans.hpp"

using namespace troupe;
using namespace std::chrono_literals;
using test::cluster_plan;

namespace {

member_options options_of(node_kind role) {
  member_options o{cluster_secret("the secret of the test cluster!!")};
  o.role = role;
  return o;
}

} // namespace

TEST_CASE("a member's share of its host's link is the rate over its peers of the other role",
          "[cluster][member]") {
  const auto plan = cluster_plan(2, 4);
  auto worker = options_of(node_kind::worker);
  CHECK(link_share(worker, plan) == 0); // no rate: unpaced
  worker.link_mbit = 1000;
  CHECK(link_share(worker, plan) == 1000 * 1000 * 1000 / 8 / 2); // two servers
  auto server = options_of(node_kind::server);
  server.link_mbit = 1000;
  CHECK(link_share(server, plan) == 1000 * 1000 * 1000 / 8 / 4); // four workers
}

TEST_CASE("backward takes what it is told, else two thirds of a stand-in's step, else unknown",
          "[cluster][member]") {
  auto o = options_of(node_kind::worker);
  CHECK(backward_seconds(o) == 0);
  o.stand_in.step = std::chrono::milliseconds(300);
  o.stand_in.samples = 32;
  CHECK(backward_seconds(o) == Approx(0.2));
  o.backward = std::chrono::milliseconds(50);
  CHECK(backward_seconds(o) == Approx(0.05));
}

TEST_CASE("a worker's slot on its host takes its own CPUs, or none where they do not fit",
          "[cluster][member]") {
  // Slot 1 of two computes of 2 threads each: CPUs 4-7 of 8.
  const auto cpus = slot_cpus(1, 2, 2, 8);
  REQUIRE(cpus.size() == 2);
  CHECK(cpus[0] == std::vector<int>{4, 5});
  CHECK(cpus[1] == std::vector<int>{6, 7});
  CHECK(slot_cpus(2, 2, 2, 8).empty());   // would need CPUs 8-11
  CHECK(slot_cpus(-1, 2, 2, 64).empty()); // no slot: nothing bound
  CHECK(slot_cpus(0, 1, 0, 64).empty());  // no compute
  CHECK(cpus_text(4, 7) == "CPUs 4-7");
  CHECK(cpus_text(3, 3) == "CPU 3");
}

TEST_CASE("compute threads: the scheduler's count, else the node's, and two counts must agree",
          "[cluster][member]") {
  auto o = options_of(node_kind::worker);
  o.default_threads = 3;
  CHECK(compute_threads(o, 0) == 3);
  CHECK(compute_threads(o, 2) == 2);
  o.threads = 2;
  CHECK(compute_threads(o, 0) == 2);
  CHECK(compute_threads(o, 2) == 2);
  CHECK_THROWS_WITH(compute_threads(o, 4), Catch::Contains("this node was given 2 compute threads")
                                             && Catch::Contains("the scheduler 4"));
}

TEST_CASE("a paced channel orders its pushes only with priority and several workers",
          "[cluster][member]") {
  channel_options channel(cluster_secret("the secret of the test cluster!!"));
  channel.priority = true;
  channel.pacing_bytes_per_second = 1 << 20;
  const auto server = [](const placement_plan& p) {
    for (std::uint32_t n = 0; n < p.nodes.size(); ++n)
      if (p.nodes[n].kind == node_kind::server)
        return n;
    return std::uint32_t{0};
  };
  const auto one = cluster_plan(1, 1);
  CHECK(push_order_of(one, channel, 0.1, server(one)).sequence.empty()); // the only worker
  const auto two = cluster_plan(1, 2);
  channel.order = forward_order_of(two); // as a member's channels are given
  const auto order = push_order_of(two, channel, 0.1, server(two));
  const auto pushes = pushes_to_node(two, channel.order, static_cast<int>(server(two)));
  REQUIRE(!pushes.empty());
  CHECK(order.sequenced == pushes.size());
  REQUIRE(order.sequence.size() == pushes.size());
  // A permutation of the pushes' ranks.
  auto ranks = order.sequence;
  std::sort(ranks.begin(), ranks.end());
  for (std::size_t i = 0; i < pushes.size(); ++i)
    CHECK(ranks[i] == pushes[i].rank);
  CHECK(order.patience >= channel.sequence_patience);
  channel.pacing_bytes_per_second = 0; // unpaced: as they come
  CHECK(push_order_of(two, channel, 0.1, server(two)).sequence.empty());
}

TEST_CASE("a worker node with loaders, computes and its machine's aggregators can be adopted, "
          "a node with others cannot, naming one",
          "[cluster][placement]") {
  const auto bsp = cluster_plan(1, 2);
  auto job = test::synthetic_job("mlp", 64);
  job.shards = 1;
  job.topology.workers = 4;
  job.topology.machines = 2;
  job.topology.levels = {aggregation_level{aggregation_scope::machine},
                         aggregation_level{aggregation_scope::all}};
  job.nodes.servers = 1;
  job.nodes.workers = 2;
  const auto hierarchical = plan_placement(job, test::small_facts);
  for (const auto* plan : {&bsp, &hierarchical})
    for (std::size_t n = 0; n < plan->nodes.size(); ++n) {
      INFO(plan->nodes[n].name);
      const auto why = unadoptable_node(*plan, static_cast<int>(n));
      if (plan->nodes[n].kind == node_kind::worker) {
        CHECK(why.empty());
      } else if (plan->nodes[n].kind == node_kind::server) {
        CHECK_THAT(why, Catch::StartsWith(plan->nodes[n].name + " holds ")
                          && Catch::EndsWith(", which no worker adopts (only loaders, computes "
                                             "and machine aggregators)"));
      }
    }
  const auto on_workers = hierarchical.actors_of(plan_role::machine_aggregator);
  REQUIRE(on_workers.size() == 2); // one per machine, each on a worker node (one shard)
}

TEST_CASE("a worker node's ranks run apart unless its machine's aggregators sum them",
          "[cluster][placement]") {
  auto job = test::synthetic_job("mlp", 64);
  job.shards = 1;
  job.topology.workers = 4;
  job.train_batches.batch_size = 8;
  job.nodes.servers = 1;
  job.nodes.workers = 2;
  const auto bsp = plan_placement(job, test::small_facts);
  job.topology.machines = 2;
  job.topology.levels = {aggregation_level{aggregation_scope::machine},
                         aggregation_level{aggregation_scope::all}};
  const auto hierarchical = plan_placement(job, test::small_facts);
  int first_worker = -1;
  for (std::size_t n = 0; n < bsp.nodes.size(); ++n)
    if (bsp.nodes[n].kind == node_kind::worker && first_worker < 0)
      first_worker = static_cast<int>(n);
  REQUIRE(first_worker > 0);
  const auto second_worker = first_worker + 1;
  REQUIRE(ranks_on(bsp, first_worker).size() == 2);
  CHECK(ranks_on(bsp, first_worker) == std::vector<int>{0, 1});
  CHECK(ranks_on(bsp, second_worker) == std::vector<int>{2, 3});
  CHECK(ranks_on(bsp, 0).empty()); // the scheduler runs no compute
  CHECK(split_refusal(bsp, first_worker, {}).empty());
  CHECK(split_refusal(bsp, first_worker, {1}).empty());
  CHECK(split_refusal(bsp, second_worker, {2, 3}).empty());
  CHECK(split_refusal(bsp, first_worker, {2})
        == "compute_2 is not one of worker_0's computes (compute_0, compute_1)");
  CHECK(split_refusal(bsp, 0, {0}) == "plan node 0 is no worker node");
  CHECK(split_refusal(bsp, 99, {0}) == "plan node 99 is no worker node");
  CHECK_THAT(split_refusal(hierarchical, first_worker, {1}),
             Catch::StartsWith("worker_0 holds its machine's aggregators (machine_aggregator_0")
               && Catch::EndsWith("which sum its computes in process: they move only together"));
  CHECK(split_refusal(hierarchical, first_worker, {}).empty()); // the whole node moves
  CHECK(rank_names({}).empty());
  CHECK(rank_names({3}) == "compute_3");
  CHECK(rank_names({1, 4}) == "compute_1, compute_4");
}
