// The gradients a compute stand-in pushes (compute_stand_in in compute_actor.hpp): the real
// model's parameter shapes, values that are not constant and are a pure function of
// (seed, rank, step, parameter), made without computing anything per step.
//
// One pool of pseudo-random values in [-1e-3, 1e-3] is drawn once (as many as the largest
// parameter holds, plus a window); a parameter's gradient at a step is a view of the pool
// starting at an offset hashed from (seed, rank, step, slot). So a step costs no arithmetic
// and no copy, the values change from step to step and from worker to worker, and a rerun
// sees the same ones. Views share the pool's storage: a receiver that would write into a
// pushed gradient sees it shared (tensor::unique() is false) and copies first.
//
// Thread-safety: immutable after construction; gradient() may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

class stand_in_gradients {
public:
  /// How many different starting offsets a gradient's view can take.
  static constexpr std::int64_t window = 1 << 16;

  stand_in_gradients() = default;
  stand_in_gradients(std::vector<shape_t> shapes, std::uint64_t seed, int rank);

  /// The gradient of parameter `slot` at `step`: shape shapes[slot]. Throws std::out_of_range
  /// for a slot the model lacks.
  tensor gradient(std::size_t slot, std::int64_t step) const;

  /// Where gradient(slot, step) starts in the pool (for tests: reproducible, varies with each input).
  std::int64_t offset(std::size_t slot, std::int64_t step) const;

private:
  std::vector<shape_t> shapes_;
  tensor pool_;
  std::uint64_t seed_ = 0;
  int rank_ = 0;
};

} // namespace troupe
