// LAMB in two serial passes (lamb.hpp): the first updates the moments and sums the squares of
// the weights and of the update direction (in double, so a key of millions of elements keeps
// its norms exact to float), the second applies the trust-scaled step. `out` may be the
// weights: the first pass only reads them.
#include <troupe/kernels/optimizers/lamb.hpp>

#include <cmath>

namespace troupe {

void lamb_update(const update_rule& rule, float lr, float weight_decay, const tensor& weights,
                 const tensor& grad, tensor& m, tensor& v, std::int64_t t, tensor& out) {
  const auto bias1 =
    static_cast<float>(1.0 - std::pow(static_cast<double>(rule.beta1), static_cast<double>(t)));
  const auto bias2 =
    static_cast<float>(1.0 - std::pow(static_cast<double>(rule.beta2), static_cast<double>(t)));
  const float b1 = rule.beta1, b2 = rule.beta2, eps = rule.eps;
  const std::int64_t n = weights.numel();
  const float* w = weights.data();
  const float* g = grad.data();
  float* mi = m.data();
  float* vi = v.data();
  auto direction = [&](std::int64_t i) {
    return (mi[i] / bias1) / (std::sqrt(vi[i] / bias2) + eps) + weight_decay * w[i];
  };
  double weight_squares = 0, update_squares = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    mi[i] = b1 * mi[i] + (1.0f - b1) * g[i];
    vi[i] = b2 * vi[i] + (1.0f - b2) * g[i] * g[i];
    const float u = direction(i);
    weight_squares += static_cast<double>(w[i]) * w[i];
    update_squares += static_cast<double>(u) * u;
  }
  const double trust = weight_squares > 0 && update_squares > 0
                         ? std::sqrt(weight_squares) / std::sqrt(update_squares)
                         : 1.0;
  const auto scale = static_cast<float>(lr * trust);
  float* o = out.data();
  for (std::int64_t i = 0; i < n; ++i)
    o[i] = w[i] - scale * direction(i);
}

} // namespace troupe
