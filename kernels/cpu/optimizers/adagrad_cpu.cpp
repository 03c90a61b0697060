// AdaGrad as one serial pass over w, g and the running sum of squares (adagrad.hpp).
#include <troupe/kernels/optimizers/adagrad.hpp>

#include <cmath>

namespace troupe {

void adagrad_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                    const tensor& grad, tensor& sum, tensor& out) {
  const float eps = rule.eps;
  const float* w = weights.data();
  const float* g = grad.data();
  float* s = sum.data();
  float* o = out.data();
  for (std::int64_t i = 0, n = weights.numel(); i < n; ++i) {
    const float gi = g[i] + weight_decay * w[i];
    s[i] += gi * gi;
    o[i] = w[i] - lr * (gi / (std::sqrt(s[i]) + eps));
  }
}

} // namespace troupe
