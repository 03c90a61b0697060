// --topology and --kv-store (apps/topology_flags.cpp): each value is the preset it names, over
// a config's topology too; MXNet's kvstore words map as the help says; bad values and
// disagreeing flags are refused naming the flag.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "apps/flags.hpp"
#include "apps/train_flags.hpp"

using namespace troupe;

namespace {

topology_options topology_of(std::vector<std::string> args) {
  return parse_train_flags(args).job.topology;
}

std::string refusal(const std::vector<std::string>& args) {
  try {
    parse_train_flags(args);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "accepted";
}

const std::vector<aggregation_level> summed{{aggregation_scope::all, 0}};

} // namespace

TEST_CASE("the flag --topology names each preset, with its argument") {
  CHECK(topology_of({}).name == "bsp");
  const auto bsp = topology_of({"--topology", "bsp", "--workers", "4"});
  CHECK(bsp.name == "bsp");
  CHECK(bsp.levels == summed);
  const auto async = topology_of({"--topology", "async", "--workers", "4"});
  CHECK(async.name == "async");
  CHECK(async.levels.empty());
  CHECK(async.staleness == -1);
  CHECK(topology_of({"--topology", "ssp:3", "--workers", "4"}).staleness == 3);
  CHECK(topology_of({"--topology", "ssp", "--workers", "4"}).staleness == 2);
  const auto machines = topology_of({"--topology", "hierarchical:4", "--workers", "8"});
  CHECK(machines.machines == 4);
  CHECK(machines.levels.size() == 2);
  CHECK(topology_of({"--topology", "hierarchical", "--workers", "4"}).machines == 2);
  CHECK(topology_of({"--topology", "backup:2", "--workers", "8"}).levels
        == std::vector<aggregation_level>{{aggregation_scope::all, 6}});
  const auto local = topology_of({"--topology", "local", "--workers", "2"});
  CHECK(local.name == "bsp");
  CHECK(local.levels == summed);
}

TEST_CASE("the flag --kv-store is MXNet's word for a preset") {
  for (const char* word : {"local", "device", "dist_sync", "dist_device_sync"}) {
    INFO(word);
    const auto t = topology_of({"--kv-store", word, "--workers", "2"});
    CHECK(t.name == "bsp");
    CHECK(t.levels == summed);
  }
  const auto async = topology_of({"--kv-store", "dist_async", "--workers", "2"});
  CHECK(async.name == "async");
  CHECK(async.levels.empty());
  // Both flags saying the same preset are one statement.
  CHECK(topology_of({"--kv-store", "dist_async", "--topology", "async"}).name == "async");
  CHECK(topology_of({"--kv-store", "local", "--topology", "bsp"}).name == "bsp");
}

TEST_CASE("the flag --topology overrides a config's topology") {
  const auto path =
    (std::filesystem::temp_directory_path() / "troupe_topology_flags.troupe").string();
  std::ofstream(path) << "cluster { workers = 4 }\ntopology ssp(staleness = 5)\n";
  CHECK(topology_of({"--config", path}).staleness == 5);
  const auto bsp = topology_of({"--config", path, "--topology", "bsp"});
  CHECK(bsp.name == "bsp");
  CHECK(bsp.staleness == -1);
  CHECK(bsp.levels == summed);
  CHECK(topology_of({"--config", path, "--kv-store", "dist_async"}).staleness == -1);
  CHECK(topology_of({"--config", path, "--topology", "ssp:1"}).staleness == 1);
  std::filesystem::remove(path);
}

TEST_CASE("bad --topology and --kv-store values are refused naming the flag and the values") {
  for (const char* bad : {"star", "ssp:x", "ssp:-1", "bsp:2", "local:1", "async:3", ""}) {
    INFO(bad);
    if (std::string(bad).empty()) { // "": the config's topology
      CHECK(refusal({"--topology", bad}) == "accepted");
      continue;
    }
    CHECK(refusal({"--topology", bad})
          == std::string("--topology: unknown topology '") + bad
               + "' (known: bsp, async, ssp[:STALENESS], hierarchical[:MACHINES], "
                 "backup[:BACKUPS], local)");
  }
  CHECK(refusal({"--kv-store", "nccl"})
        == "--kv-store: unknown kv-store 'nccl' (known: local, device, dist_sync, dist_async, "
           "dist_device_sync)");
  CHECK(refusal({"--topology", "async", "--kv-store", "dist_sync"})
        == "--topology async and --kv-store dist_sync name different topologies (async and "
           "bsp): give one");
  CHECK_THAT(refusal({"--topology", "backup:2", "--workers", "2"}),
             Catch::StartsWith("--topology backup:2: backup workers (2)"));
  CHECK(refusal({"--topology", "ssp:2000000"})
        == "--topology ssp:2000000: staleness must be between 0 and 1000000, got 2000000");
  CHECK_THAT(refusal({"--topology", "hierarchical:3", "--workers", "4"}),
             Catch::StartsWith("--topology hierarchical:3: aggregate(machine) needs workers (4)"));
}

TEST_CASE("local and device are one process: a cluster run given them is refused") {
  const std::vector<std::string> cluster{"--server-nodes", "1", "--worker-nodes", "2"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), cluster.begin(), cluster.end());
    return args;
  };
  CHECK(refusal(with({"--topology", "local"}))
        == "--topology local trains in one process, and this is a cluster run (1 server and 2 "
           "worker processes): use --topology bsp (--kv-store dist_sync)");
  CHECK_THAT(refusal(with({"--kv-store", "device"})),
             Catch::StartsWith("--kv-store device trains"));
  CHECK(refusal(with({"--kv-store", "dist_sync"})) == "accepted");
  const auto node = [](const std::vector<std::string>& args) {
    try {
      parse_train_flags(args, "node", "test", {}, [](const cluster_settings&) { return 2; });
    } catch (const usage_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(node({"--topology", "local"}), Catch::StartsWith("--topology local trains in one"));
  CHECK(node({"--topology", "bsp"}) == "accepted");
}
