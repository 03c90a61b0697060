// AdamW (Loshchilov and Hutter) in torch.optim.AdamW's formulation: the weight decay is
// decoupled from the gradient, a shrink of the weights before Adam's step on the raw gradient:
//   w = w * (1 - lr * wd)
//   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
//   w = w - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#pragma once

#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe {

/// As adam_update (adam.hpp), the decay decoupled.
void adamw_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                  const tensor& grad, tensor& m, tensor& v, std::int64_t t, tensor& out);

} // namespace troupe
