// Test helper: cuts a one-process training_checkpoint into the parts a cluster run would write
// (shard s on server s % servers, worker w's replica on worker node w % worker_nodes, or with
// no worker nodes on server w % servers, as a process that is both would write them) and
// writes them with a manifest. Used by tests/io/checkpoint_parts_test.cpp with hand-made keys
// and by tests/apps/checkpoint_split_tool.cpp with a real key plan, so cluster checkpoints can
// be tested before (and independently of) the cluster side that writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <troupe/io/checkpoint_parts.hpp>

namespace troupe::test {

/// A key as key_slice (graph/config/key_assignment.hpp) has it, without depending on graph/.
struct split_key {
  std::size_t slot = 0;
  std::int64_t offset = 0;
  std::int64_t length = 0;
  bool whole = false;
};

/// (node name, its part): "server_<i>" for each server, "worker_<j>" for each worker node.
inline std::vector<std::pair<std::string, checkpoint_part>>
split_checkpoint(const training_checkpoint& c, const std::vector<std::vector<split_key>>& shards,
                 std::size_t servers, std::size_t worker_nodes) {
  std::vector<std::pair<std::string, checkpoint_part>> out;
  for (std::size_t s = 0; s < servers; ++s)
    out.emplace_back("server_" + std::to_string(s), checkpoint_part{});
  for (std::size_t w = 0; w < worker_nodes; ++w)
    out.emplace_back("worker_" + std::to_string(w), checkpoint_part{});
  for (std::size_t s = 0; s < shards.size(); ++s) {
    shard_part shard;
    shard.index = s;
    shard.counters = resumed_counters(c, s, shards.size(), "split_checkpoint");
    shard.optimizer = c.optimizer;
    for (const auto& k : shards[s]) {
      auto cut = [&](const tensor& t) {
        return k.whole ? t.clone() : t.flat_slice(k.offset, k.length).clone();
      };
      const auto& saved = c.state.at(k.slot);
      optimizer_state state{{}, c.optimizer == optimizer_kind::sgd ? 0 : saved.steps};
      for (const auto& t : saved.tensors)
        state.tensors.push_back(cut(t));
      shard.keys.push_back({k.slot, k.offset, cut(c.parameters.at(k.slot).value), state});
    }
    out[s % servers].second.shards.push_back(std::move(shard));
  }
  for (std::size_t w = 0; w < c.replicas.size(); ++w) {
    const auto node = worker_nodes == 0 ? w % servers : servers + w % worker_nodes;
    out[node].second.replicas.emplace_back(static_cast<int>(w), c.replicas[w]);
  }
  return out;
}

/// The manifest header of `c` cut into `shards` shards.
inline checkpoint_header header_of(const training_checkpoint& c, std::size_t shards) {
  checkpoint_header h;
  h.epoch = c.epoch;
  h.network = c.network;
  h.steps_per_epoch = c.steps_per_epoch;
  for (const auto& p : c.parameters) {
    h.parameter_names.push_back(p.name);
    h.parameter_shapes.push_back(p.value.shape());
  }
  h.workers = static_cast<int>(c.replicas.size());
  h.shards = shards;
  return h;
}

/// Writes every part of split_checkpoint, then the manifest; returns the records written.
inline std::vector<part_record> write_split(const std::string& prefix, const training_checkpoint& c,
                                            const std::vector<std::vector<split_key>>& shards,
                                            std::size_t servers, std::size_t worker_nodes) {
  std::vector<part_record> records;
  for (const auto& [node, part] : split_checkpoint(c, shards, servers, worker_nodes))
    if (!part.shards.empty() || !part.replicas.empty())
      records.push_back(
        write_checkpoint_part(checkpoint_part_path(prefix, c.epoch, node), c.epoch, part));
  write_checkpoint_manifest(prefix, header_of(c, shards.size()), records);
  return records;
}

} // namespace troupe::test
