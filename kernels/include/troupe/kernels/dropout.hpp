// Inverted dropout: in training each element is zeroed with probability p and the survivors
// are scaled by 1/(1-p); inference is the identity. The mask comes from a counter-based hash
// of (seed, call counter, element index), so results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

class dropout_op {
public:
  /// Throws std::invalid_argument unless 0 <= p < 1.
  dropout_op(float p, std::uint64_t seed);

  void forward(const tensor& x, tensor& y, bool training);
  /// dx = dy * mask / (1 - p) for the last training forward.
  void backward(const tensor& dy, tensor& dx);

  float probability() const { return p_; }
  std::uint64_t seed() const { return seed_; }
  /// Training forwards so far (the call number the next one draws its mask with).
  std::uint64_t calls() const { return calls_; }
  /// Makes the next training forward draw call `calls`'s mask: a run resumed from a
  /// checkpoint continues the stream where the interrupted run left it.
  void seek(std::uint64_t calls) { calls_ = calls; }

private:
  float p_;
  std::uint64_t seed_;
  std::uint64_t calls_ = 0;
  std::vector<std::uint8_t> mask_;
};

} // namespace troupe
