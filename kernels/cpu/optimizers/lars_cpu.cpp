// LARS in two serial passes (lars.hpp): the norms of the weights and the gradient (summed in
// double), then the momentum step at the key's own rate. `out` may be the weights.
#include <troupe/kernels/optimizers/lars.hpp>

#include <cmath>

namespace troupe {

void lars_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                 const tensor& grad, tensor& momentum_buffer, tensor& out) {
  const std::int64_t n = weights.numel();
  const float* w = weights.data();
  const float* g = grad.data();
  double weight_squares = 0, grad_squares = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    weight_squares += static_cast<double>(w[i]) * w[i];
    grad_squares += static_cast<double>(g[i]) * g[i];
  }
  const double w_norm = std::sqrt(weight_squares), g_norm = std::sqrt(grad_squares);
  const double local = w_norm > 0 && g_norm > 0
                         ? rule.trust * w_norm / (g_norm + weight_decay * w_norm + rule.eps)
                         : 1.0;
  const auto rate = static_cast<float>(lr * local);
  const float mu = rule.sgd.momentum;
  float* b = momentum_buffer.data();
  float* o = out.data();
  for (std::int64_t i = 0; i < n; ++i) {
    b[i] = mu * b[i] + rate * (g[i] + weight_decay * w[i]);
    o[i] = w[i] - b[i];
  }
}

} // namespace troupe
