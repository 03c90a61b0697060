// The traffic registry: each channel's entry counts its frames, is named by the peer's address
// until its hello gives the peer's own name, and keeps that name (peer_of, snapshot) after the
// channel has ended.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <troupe/cluster/local_node.hpp>
#include <troupe/cluster/traffic_registry.hpp>

using namespace troupe;

TEST_CASE("a channel's entry is named by its address, then by the name its hello gave",
          "[cluster][traffic]") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor first{sys}, second{sys};
  traffic_registry registry;
  auto counters = registry.add(first->address(), "127.0.0.1:4000");
  registry.add(second->address(), "127.0.0.1:4001");
  CHECK(registry.peer_of(first->address()) == "127.0.0.1:4000");
  registry.rename(first->address(), "worker_1");
  CHECK(registry.peer_of(first->address()) == "worker_1");
  CHECK(registry.peer_of(second->address()) == "127.0.0.1:4001"); // the other keeps its own
  CHECK(registry.peer_of(caf::actor_addr{}).empty());             // not registered here
  counters->count_in(0, 100);
  const auto entries = registry.snapshot();
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].channel == first->address());
  CHECK(entries[0].traffic.peer == "worker_1");
  CHECK(entries[0].traffic.bytes_in.at(0) == 100);
}
