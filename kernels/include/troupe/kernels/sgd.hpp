// Stochastic gradient descent with momentum, L2 weight decay and optional Nesterov momentum,
// in PyTorch's formulation so results compare one to one:
//   g = grad + wd * w
//   v = momentum * v + g
//   step = nesterov ? g + momentum * v : v
//   w = w - lr * step
// The parameter shard actor owns the weights and the velocity and calls this per key.
#pragma once

#include <troupe/kernels/tensor.hpp>

namespace troupe {

struct sgd_options {
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

/// Fields in declaration order, for CAF's serializers and graph's value_hash (no CAF here).
template <class Inspector> typename Inspector::result_type inspect(Inspector& f, sgd_options& x) {
  return f(x.momentum, x.weight_decay, x.nesterov);
}

/// Updates `weights` in place and `velocity` (same shape, zero at start) from `grad`.
/// `out` receives the new weights; it may be `weights` itself (in place) or another buffer of
/// the same shape (copy-on-write when readers still hold the old weights). All four on the CPU,
/// or all on one GPU (then the update runs there and has finished when this returns); mixed
/// devices throw std::invalid_argument.
void sgd_update(const sgd_options& options, float lr, const tensor& weights, const tensor& grad,
                tensor& velocity, tensor& out, bool apply_weight_decay = true);

} // namespace troupe
