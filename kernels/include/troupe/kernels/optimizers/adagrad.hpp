// AdaGrad in torch.optim.Adagrad's formulation with lr_decay 0 and initial_accumulator_value 0:
//   g = grad + wd * w
//   sum = sum + g * g
//   w = w - lr * g / (sqrt(sum) + eps)
#pragma once

#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe {

/// Tensors of one shape on the CPU (checked by optimizer_update): weights, grad, out [n];
/// sum [n], the squared gradients so far, updated in place.
void adagrad_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                    const tensor& grad, tensor& sum, tensor& out);

} // namespace troupe
