// The gradients a compute stand-in pushes (compute_stand_in in compute_actor.hpp): the real
// model's parameter shapes, values that are not constant and are a pure function of
// (seed, rank, step, parameter), made without computing anything per step.
//
// One pool of pseudo-random values in [-1e-3, 1e-3] is drawn once (as many as the largest
// parameter holds, plus a window); a parameter's gradient at a step is a view of the pool
// starting at an offset hashed from (seed, rank, step, slot). So a step costs no arithmetic
// and no copy, the values change from step to step and from worker to worker, and a rerun
// sees the same ones. Offsets are multiples of 16 floats, so every view starts 64-byte aligned
// as a tensor's own storage does: a frame references aligned values in place but copies
// unaligned ones (frame_codec), and a stand-in must cost the sender what a real gradient does
// (VGG-16's 392 MiB fc6 copied in about half the steps took the sender's CPU for seconds).
// Views share the pool's storage: a receiver that would write into a pushed gradient sees it
// shared (tensor::unique() is false) and copies first.
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
  /// The pool holds this many values beyond the largest parameter; a view starts in it.
  static constexpr std::int64_t window = 1 << 16;
  /// Every view's offset is a multiple of this many floats (64 bytes): window / alignment
  /// different starts.
  static constexpr std::int64_t alignment = 16;

  stand_in_gradients() = default;
  stand_in_gradients(std::vector<shape_t> shapes, std::uint64_t seed, int rank);

  /// The gradient of parameter `slot` at `step`: shape shapes[slot]. Throws std::out_of_range
  /// for a slot the model lacks.
  tensor gradient(std::size_t slot, std::int64_t step) const;

  /// Where gradient(slot, step) starts in the pool (for tests: reproducible, varies with each
  /// input).
  std::int64_t offset(std::size_t slot, std::int64_t step) const;

private:
  std::vector<shape_t> shapes_;
  tensor pool_;
  std::uint64_t seed_ = 0;
  int rank_ = 0;
};

} // namespace troupe
