// backup_ring: the ring of server nodes that shards with a backup are kept around, as pure
// functions of the plan.
#include <catch2/catch.hpp>

#include <vector>

#include "cluster/backup_ring.hpp"
#include "tests/cluster/cluster_plans.hpp"

using namespace troupe;
using test::cluster_plan;

namespace {

std::vector<int> server_nodes(const placement_plan& plan) {
  std::vector<int> nodes;
  for (std::size_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == node_kind::server)
      nodes.push_back(static_cast<int>(n));
  return nodes;
}

} // namespace

TEST_CASE("each server's backups are on the next server, the last's on the first",
          "[cluster][backups]") {
  const auto plan = cluster_plan(3, 2);
  const auto servers = server_nodes(plan);
  REQUIRE(servers.size() == 3);
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const auto next = servers[(i + 1) % servers.size()];
    CHECK(next_server(plan, servers[i]) == next);
    CHECK(previous_server(plan, next) == servers[i]);
  }
}

TEST_CASE("a ring needs two servers, and a worker node is on none", "[cluster][backups]") {
  const auto one = cluster_plan(1, 2);
  const auto lone = server_nodes(one);
  REQUIRE(lone.size() == 1);
  CHECK(next_server(one, lone[0]) == -1);
  CHECK(previous_server(one, lone[0]) == -1);
  const auto two = cluster_plan(2, 2);
  for (std::size_t n = 0; n < two.nodes.size(); ++n)
    if (two.nodes[n].kind == node_kind::worker)
      CHECK(next_server(two, static_cast<int>(n)) == -1);
  CHECK(next_server(two, -1) == -1);
  CHECK(next_server(two, static_cast<int>(two.nodes.size())) == -1);
}

TEST_CASE("a node's shards are named for log lines, or said to be none", "[cluster][backups]") {
  const auto plan = cluster_plan(2, 1);
  const auto servers = server_nodes(plan);
  REQUIRE(servers.size() == 2);
  for (auto node : servers) {
    const auto names = shard_names(plan, node);
    CHECK(names.rfind("shard_", 0) == 0);
    CHECK(names.find("no shard") == std::string::npos);
  }
  CHECK(shard_names(plan, servers[0]) != shard_names(plan, servers[1]));
  for (std::size_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == node_kind::worker)
      CHECK(shard_names(plan, static_cast<int>(n)) == "no shard");
}
