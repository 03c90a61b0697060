// Test helper: a small training_checkpoint with every kind of state (two parameters, momentum,
// two shards' counters, two replicas with a buffer and a stream position), for the checkpoint
// file and cluster checkpoint tests.
#pragma once

#include <cstdint>

#include <troupe/io/checkpoint_file.hpp>

namespace troupe::test {

inline training_checkpoint sample_checkpoint(std::int64_t epoch = 2) {
  training_checkpoint c;
  c.epoch = epoch;
  c.network = "lenet";
  c.steps_per_epoch = 17;
  c.parameters = {{"fc.weight", tensor::from_values({2, 2}, {1, 2, 3, 4})},
                  {"fc.bias", tensor::from_values({2}, {0.5f, -0.5f})}};
  c.state = {{{tensor::from_values({2, 2}, {0.1f, 0.2f, 0.3f, 0.4f})}, 0},
             {{tensor::from_values({2}, {9, 8})}, 0}};
  shard_counters s;
  s.updates = 34;
  s.last_learning_rate = 0.1f;
  s.last_steps = {{0, 33}, {1, 32}};
  c.shards = {s, shard_counters{}};
  for (float base : {1.0f, 2.0f}) {
    replica_state r;
    r.buffers = {{"bn.running_mean", tensor::from_values({2}, {base, base + 1})}};
    r.streams = {{"drop1", static_cast<std::uint64_t>(base * 10)}};
    c.replicas.push_back(r);
  }
  return c;
}

} // namespace troupe::test
