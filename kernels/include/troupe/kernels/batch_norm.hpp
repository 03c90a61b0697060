// Batch normalization over the channel axis of NCHW (or NC) tensors, training and inference.
//
// Training normalizes with the batch statistics and folds them into the running statistics
// (running = (1 - momentum) * running + momentum * batch; the variance folded in is the
// unbiased one, as in PyTorch). Inference normalizes with the running statistics. The op
// keeps the batch mean / variance of the last training forward for `backward`.
//
// Thread-safety: one op object is used by one thread at a time.
#pragma once

#include <memory>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

struct batch_norm_params {
  float epsilon = 1e-5f;
  float momentum = 0.1f;
};

class batch_norm_op {
public:
  explicit batch_norm_op(batch_norm_params params = {});
  ~batch_norm_op();
  batch_norm_op(batch_norm_op&&) noexcept;
  batch_norm_op& operator=(batch_norm_op&&) noexcept;

  /// y = gamma * (x - mean_batch) / sqrt(var_batch + eps) + beta; x, y [N, C, H, W] or [N, C];
  /// gamma, beta, running_mean, running_var [C]. Updates the running statistics.
  void forward_training(const tensor& x, const tensor& gamma, const tensor& beta, tensor& y,
                        tensor& running_mean, tensor& running_var);
  /// y = gamma * (x - running_mean) / sqrt(running_var + eps) + beta.
  void forward_inference(const tensor& x, const tensor& gamma, const tensor& beta,
                         const tensor& running_mean, const tensor& running_var, tensor& y);
  /// Gradients of the last forward_training call of x's shape: dx like x, dgamma and dbeta
  /// [C]. Throws std::logic_error when there was none.
  void backward(const tensor& x, const tensor& gamma, const tensor& dy, tensor& dx, tensor& dgamma,
                tensor& dbeta);

  const batch_norm_params& params() const { return params_; }

private:
  struct impl;
  batch_norm_params params_;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe
