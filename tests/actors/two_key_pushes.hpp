// A two-key shard and its pushes, for tests that follow a shard's weights step by step
// (shard_backup_test, compressed_hop_order_test): the keys' start values, a push of both keys
// whose values change with the step and the source, and a bit-for-bit comparison of tensors.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include <troupe/actors/messages.hpp>
#include <troupe/actors/param_shard_actor.hpp>

namespace troupe::test {

inline std::vector<shard_key> two_keys() {
  return {shard_key{"fc.weight", tensor::from_values({2, 3}, {1, 2, 3, 4, 5, 6}), true},
          shard_key{"fc.bias", tensor::from_values({2}, {0.5f, -0.5f}), false}};
}

// Step `step`'s push of both keys from `source`: values that change with step and source.
inline gradient_push push_of(std::int64_t step, int source = 0, std::int64_t samples = 8) {
  gradient_push p;
  p.step = step;
  p.source = source;
  p.samples = samples;
  p.keys = {0, 1};
  const float s = 0.25f * static_cast<float>(step + 1) + 0.5f * static_cast<float>(source);
  p.gradients = {tensor::from_values({2, 3}, {s, -s, 2 * s, 0.1f, -0.3f * s, 1}),
                 tensor::from_values({2}, {s, -2 * s})};
  return p;
}

inline bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape()
         && std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * 4) == 0;
}

} // namespace troupe::test
