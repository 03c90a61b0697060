// Max, average and global-average pooling on cuDNN, the CUDA twin of pool2d_op
// (troupe/kernels/pooling.hpp): the same parameters, output shape (ceil mode included) and
// conventions: max pooling never picks padding; average pooling divides by the window clipped
// to the padded input, so padding counts and the part of a ceil-mode window past it does not.
//
// One case has no cuDNN equivalent and is refused with std::invalid_argument: average pooling
// with padding whose ceil-mode output reaches past the padded input (cuDNN counts either all
// padding or none). Unlike pool2d_op, which keeps arg-max positions, backward takes the
// forward's x and y again (cuDNN finds the maxima from them) and needs no prior forward.
//
// Tensors are raw device pointers with x's shape beside them; calls are queued on the
// context's stream and return without waiting. Shapes are checked on the host before anything
// is queued (std::invalid_argument naming them).
//
// Thread-safety: one op object is used by one thread at a time.
// Private to kernels/ (the CUDA backend).
#pragma once

#include <memory>

#include <troupe/kernels/pooling.hpp>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

class pool2d_cuda {
public:
  explicit pool2d_cuda(pool2d_params params);
  ~pool2d_cuda();
  pool2d_cuda(pool2d_cuda&&) noexcept;
  pool2d_cuda& operator=(pool2d_cuda&&) noexcept;

  /// [N, C, P, Q] for x [N, C, H, W], as pool2d_op::output_shape; std::invalid_argument when
  /// the window does not fit or cuDNN cannot match the op's average (see above).
  shape_t output_shape(const shape_t& x_shape) const;

  /// y [N, C, P, Q] from x [N, C, H, W].
  void forward(cuda_context& context, const shape_t& x_shape, const float* x, float* y);

  /// dx [N, C, H, W] from dy [N, C, P, Q], given the forward's x and y (read by max pooling;
  /// cuDNN's interface takes them for every mode, so they are required for all).
  void backward(cuda_context& context, const shape_t& x_shape, const float* x, const float* y,
                const float* dy, float* dx);

  const pool2d_params& params() const { return params_; }

private:
  struct impl;
  pool2d_params params_;
  pool2d_op rules_; // the CPU op: its parameter and shape rules are this op's too
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::cuda
