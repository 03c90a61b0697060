// Adam as one serial pass over w, g, m and v (adam.hpp), with the bias corrections of
// adam_bias.hpp.
#include <troupe/kernels/optimizers/adam.hpp>

#include <cmath>

#include "kernels/cpu/optimizers/adam_bias.hpp"

namespace troupe {

void adam_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                 const tensor& grad, tensor& m, tensor& v, std::int64_t t, tensor& out) {
  const auto [step_size, bias2_root] = adam_bias_of(rule, lr, t);
  const float b1 = rule.beta1, b2 = rule.beta2, eps = rule.eps;
  const float* w = weights.data();
  const float* g = grad.data();
  float* mi = m.data();
  float* vi = v.data();
  float* o = out.data();
  for (std::int64_t i = 0, n = weights.numel(); i < n; ++i) {
    const float gi = g[i] + weight_decay * w[i];
    mi[i] = b1 * mi[i] + (1.0f - b1) * gi;
    vi[i] = b2 * vi[i] + (1.0f - b2) * gi * gi;
    const float denom = std::sqrt(vi[i]) / bias2_root + eps;
    o[i] = w[i] - step_size * (mi[i] / denom);
  }
}

} // namespace troupe
