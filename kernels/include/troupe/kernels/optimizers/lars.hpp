// LARS (You, Gitman and Ginsburg, "Large Batch Training of Convolutional Networks"): SGD with
// momentum whose rate each key scales by the ratio of its weights' norm to its gradient's:
//   local = trust * |w| / (|grad| + wd * |w| + eps)   (1 when |w| or |grad| is 0)
//   b = momentum * b + lr * local * (grad + wd * w)
//   w = w - b
// Norms are Euclidean over the key, so a key that is a slice of a parameter takes its slice's,
// as lamb.hpp says of LAMB.
#pragma once

#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe {

/// Tensors of one shape on the CPU (checked by optimizer_update): weights, grad, out [n];
/// momentum_buffer b [n], updated in place. Two passes: the norms, then the step.
void lars_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                 const tensor& grad, tensor& momentum_buffer, tensor& out);

} // namespace troupe
