// 2-D convolution on cuDNN, the CUDA twin of conv2d_op (troupe/kernels/conv2d.hpp): the same
// parameters (stride, symmetric zero padding, groups), the same NCHW / OIHW layouts and output
// shape, gradients written, not accumulated.
//
// Tensors are raw device pointers with their shapes beside them; every call is queued on the
// context's stream and returns without waiting. Shapes are checked on the host before anything
// is queued (std::invalid_argument naming them). The op caches, per input shape, the cuDNN
// descriptors and the algorithm chosen for each direction (conv2d_cuda.cpp says how).
//
// Thread-safety: one op object is used by one thread at a time, with contexts of one device.
// Private to kernels/ (the CUDA backend).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include <troupe/kernels/compute_device.hpp>
#include <troupe/kernels/conv2d.hpp>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

struct conv2d_cuda_options {
  /// The most scratch memory one algorithm may use; faster algorithms that need more are
  /// passed over. The memory itself comes from cuda_context::workspace.
  std::size_t workspace_limit = std::size_t{256} << 20;
  /// true: time every applicable algorithm once per shape and direction (cudnnFind*, which
  /// blocks the host and allocates its own trial buffers); false: take cuDNN's heuristic
  /// ranking (cudnnGet*_v7) without running anything.
  bool benchmark = true;
  /// false: pass over the FFT and non-fused Winograd algorithms, whose error is far outside
  /// float32's (conv2d_cuda.cpp); true: take them when they are fastest, as PyTorch's
  /// cudnn.benchmark does. By default what the process chose (`--cudnn-algorithms`).
  bool transforming_algorithms =
    current_convolution_algorithms() == convolution_algorithms::fastest;
};

/// Whether an algorithm computes through a transform of the data (FFT, non-fused Winograd).
bool transforms_data(cudnnConvolutionFwdAlgo_t algo);
bool transforms_data(cudnnConvolutionBwdDataAlgo_t algo);
bool transforms_data(cudnnConvolutionBwdFilterAlgo_t algo);

/// The algorithms a conv2d_cuda chose for one input shape; empty where that direction has not
/// run yet.
struct conv2d_algorithms {
  std::optional<cudnnConvolutionFwdAlgo_t> forward;
  std::optional<cudnnConvolutionBwdDataAlgo_t> backward_data;
  std::optional<cudnnConvolutionBwdFilterAlgo_t> backward_filter;
};

class conv2d_cuda {
public:
  explicit conv2d_cuda(conv2d_params params, conv2d_cuda_options options = {});
  ~conv2d_cuda();
  conv2d_cuda(conv2d_cuda&&) noexcept;
  conv2d_cuda& operator=(conv2d_cuda&&) noexcept;

  /// [N, K, P, Q] for x [N, C, H, W] and w [K, C/groups, R, S], as conv2d_op::output_shape;
  /// std::invalid_argument naming the shapes when they do not fit.
  shape_t output_shape(const shape_t& x_shape, const shape_t& w_shape) const;

  /// y [N, K, P, Q] = conv(x [N, C, H, W], w [K, C/g, R, S]) + b [K] (b may be null).
  void forward(cuda_context& context, const shape_t& x_shape, const shape_t& w_shape,
               const float* x, const float* w, const float* b, float* y);

  /// From dy [N, K, P, Q]: dx [N, C, H, W] (skipped when null), dw [K, C/g, R, S], db [K]
  /// (skipped when null). x and w are the forward inputs (w is read only for dx).
  void backward(cuda_context& context, const shape_t& x_shape, const shape_t& w_shape,
                const float* x, const float* w, const float* dy, float* dx, float* dw, float* db);

  const conv2d_params& params() const { return params_; }

  /// What was chosen for input `x_shape` and weights `w_shape` (tests, diagnostics).
  conv2d_algorithms algorithms(const shape_t& x_shape, const shape_t& w_shape) const;

private:
  struct impl;
  conv2d_params params_;
  conv2d_cuda_options options_;
  conv2d_op rules_; // the CPU op: its parameter and shape rules are this op's too
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::cuda
