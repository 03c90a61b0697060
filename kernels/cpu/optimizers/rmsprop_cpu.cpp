// RMSProp as one serial pass over w, g and the square average (rmsprop.hpp); with momentum
// the buffer is a fourth stream, without it the buffer is left alone (zero).
#include <troupe/kernels/optimizers/rmsprop.hpp>

#include <cmath>

namespace troupe {

void rmsprop_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                    const tensor& grad, tensor& square_avg, tensor& momentum_buffer, tensor& out) {
  const float alpha = rule.alpha, eps = rule.eps, mu = rule.sgd.momentum;
  const float* w = weights.data();
  const float* g = grad.data();
  float* s = square_avg.data();
  float* b = momentum_buffer.data();
  float* o = out.data();
  for (std::int64_t i = 0, n = weights.numel(); i < n; ++i) {
    const float gi = g[i] + weight_decay * w[i];
    s[i] = alpha * s[i] + (1.0f - alpha) * gi * gi;
    const float avg = std::sqrt(s[i]) + eps;
    if (mu > 0) {
      b[i] = mu * b[i] + gi / avg;
      o[i] = w[i] - lr * b[i];
    } else {
      o[i] = w[i] - lr * (gi / avg);
    }
  }
}

} // namespace troupe
