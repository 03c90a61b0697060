// Adam (Kingma and Ba) in torch.optim.Adam's formulation (amsgrad off), L2 weight decay folded
// into the gradient:
//   g = grad + wd * w
//   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
//   w = w - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// with t the key's update count, 1 for the first update (bias correction).
#pragma once

#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe {

/// Tensors of one shape on the CPU (checked by optimizer_update): weights, grad, out [n];
/// m, v [n] the first and second moments, updated in place; `t` >= 1.
void adam_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                 const tensor& grad, tensor& m, tensor& v, std::int64_t t, tensor& out);

} // namespace troupe
