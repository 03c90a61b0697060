// RMSProp in torch.optim.RMSprop's formulation, not centered:
//   g = grad + wd * w
//   s = alpha * s + (1 - alpha) * g * g
//   momentum > 0:  b = momentum * b + g / (sqrt(s) + eps);  w = w - lr * b
//   momentum = 0:  w = w - lr * g / (sqrt(s) + eps)
#pragma once

#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe {

/// Tensors of one shape on the CPU (checked by optimizer_update): weights, grad, out [n];
/// square_avg s and momentum_buffer b [n], updated in place (b stays zero without momentum).
void rmsprop_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                    const tensor& grad, tensor& square_avg, tensor& momentum_buffer, tensor& out);

} // namespace troupe
