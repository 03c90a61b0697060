// LAMB (You et al., "Large Batch Optimization for Deep Learning", Algorithm 2): Adam's
// bias-corrected direction plus decoupled weight decay, scaled per key by a trust ratio:
//   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
//   r = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
//   u = r + wd * w
//   trust = |w| / |u| (Euclidean norms over the key), 1 when either norm is 0
//   w = w - lr * trust * u
// The trust ratio is the key's: a key that is a slice of a parameter (a key plan's split)
// takes the norms of its slice, as a layer-wise LAMB would of a layer split in two.
#pragma once

#include <troupe/kernels/optimizers/update_rule.hpp>

namespace troupe {

/// Tensors of one shape on the CPU (checked by optimizer_update): weights, grad, out [n];
/// m, v [n] the moments, updated in place; `t` >= 1. Two passes: the moments and the norms,
/// then the step.
void lamb_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                 const tensor& grad, tensor& m, tensor& v, std::int64_t t, tensor& out);

} // namespace troupe
