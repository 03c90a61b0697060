// Test tool: rewrites a one-process checkpoint as the files a cluster run writes, so the CLI
// tests (checkpoint_cli.sh, cluster scenarios) can feed troupe train, troupe eval and
// scripts/load_checkpoint.py a manifest and parts without a cluster run.
//
// usage: troupe_checkpoint_split PREFIX EPOCH SHARDS SERVERS WORKER_NODES [SLICE_BYTES]
// Reads PREFIX-EEEE.safetensors, cuts its parameters with the key plan of SHARDS shards
// (plan_keys, slices of at most SLICE_BYTES, default the plan's), puts shard s on server
// s % SERVERS and worker w on worker node w % WORKER_NODES, writes PREFIX-EEEE.<node>.safetensors
// for each and PREFIX-EEEE.manifest.json last (which removes the one-process file). Counters of
// another shard count than the file's come from resumed_counters. Exit 1 with the reason on
// failure, 2 for bad usage.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include <troupe/graph/config/key_assignment.hpp>
#include <troupe/io/checkpoint_parts.hpp>

#include "tests/io/checkpoint_split.hpp"

int main(int argc, char** argv) {
  using namespace troupe;
  if (argc != 6 && argc != 7) {
    std::cerr
      << "usage: troupe_checkpoint_split PREFIX EPOCH SHARDS SERVERS WORKER_NODES [SLICE_BYTES]\n";
    return 2;
  }
  try {
    const std::string prefix = argv[1];
    const auto epoch = std::stoll(argv[2]);
    const auto shard_count = std::stoi(argv[3]);
    const auto servers = static_cast<std::size_t>(std::stoul(argv[4]));
    const auto worker_nodes = static_cast<std::size_t>(std::stoul(argv[5]));
    key_plan_options options;
    if (argc == 7)
      options.slice_bytes = std::stoll(argv[6]);
    const auto c = read_checkpoint(checkpoint_path(prefix, epoch));
    std::vector<std::int64_t> sizes;
    for (const auto& p : c.parameters)
      sizes.push_back(p.value.numel());
    std::vector<std::vector<test::split_key>> shards;
    for (const auto& keys : plan_keys(sizes, shard_count, options).shards) {
      shards.emplace_back();
      for (const auto& k : keys)
        shards.back().push_back({k.slot, k.offset, k.length, k.whole});
    }
    for (const auto& r : test::write_split(prefix, c, shards, servers, worker_nodes))
      std::cout << r.file << ' ' << r.bytes << ' ' << r.checksum << '\n';
    std::cout << checkpoint_manifest_path(prefix, epoch) << '\n';
  } catch (const std::exception& e) {
    std::cerr << "troupe_checkpoint_split: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
