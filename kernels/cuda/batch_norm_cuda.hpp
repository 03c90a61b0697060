// Batch normalization on cuDNN, the CUDA twin of batch_norm_op (troupe/kernels/batch_norm.hpp):
// per channel of NCHW (or NC) input, the same epsilon, running statistics folded in as
// running = (1 - momentum) * running + momentum * batch with the unbiased batch variance, and
// the batch mean / inverse std of the last training forward of a shape kept for `backward`.
//
// Tensors are raw device pointers, x's shape beside them (every other tensor is [C] or x's
// shape); calls are queued on the context's stream and return without waiting. Shapes are
// checked on the host before anything is queued (std::invalid_argument naming them).
//
// Thread-safety: one op object is used by one thread at a time, with contexts of one device
// (the saved statistics live in that device's memory).
// Private to kernels/ (the CUDA backend).
#pragma once

#include <memory>

#include <troupe/kernels/batch_norm.hpp>

#include "kernels/cuda/cuda_context.hpp"

namespace troupe::cuda {

class batch_norm_cuda {
public:
  explicit batch_norm_cuda(batch_norm_params params = {});
  ~batch_norm_cuda();
  batch_norm_cuda(batch_norm_cuda&&) noexcept;
  batch_norm_cuda& operator=(batch_norm_cuda&&) noexcept;

  /// y = gamma * (x - mean_batch) / sqrt(var_batch + eps) + beta; x, y [N, C, H, W] or [N, C];
  /// gamma, beta, running_mean, running_var [C]. Updates the running statistics.
  void forward_training(cuda_context& context, const shape_t& x_shape, const float* x,
                        const float* gamma, const float* beta, float* y, float* running_mean,
                        float* running_var);

  /// y = gamma * (x - running_mean) / sqrt(running_var + eps) + beta.
  void forward_inference(cuda_context& context, const shape_t& x_shape, const float* x,
                         const float* gamma, const float* beta, const float* running_mean,
                         const float* running_var, float* y);

  /// Gradients of the last forward_training call of x's shape: dx like x, dgamma and dbeta
  /// [C]. Throws std::logic_error when there was none.
  void backward(cuda_context& context, const shape_t& x_shape, const float* x, const float* gamma,
                const float* dy, float* dx, float* dgamma, float* dbeta);

private:
  struct impl;
  batch_norm_params params_;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::cuda
