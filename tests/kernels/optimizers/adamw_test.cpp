// AdamW against torch.optim.AdamW's formulas per element: the decay shrinks the weights
// before the step and never enters the moments.
#include <catch2/catch.hpp>

#include "reference_steps.hpp"
#include <troupe/kernels/optimizers/adamw.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

reference_step adamw_reference(const update_rule& r, double lr, double wd) {
  return [=](std::vector<double>& w, const std::vector<double>& g,
             std::vector<std::vector<double>>& s, int t) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] *= 1 - lr * wd;
      s[0][i] = r.beta1 * s[0][i] + (1 - r.beta1) * g[i];
      s[1][i] = r.beta2 * s[1][i] + (1 - r.beta2) * g[i] * g[i];
      const double m_hat = s[0][i] / (1 - std::pow(double{r.beta1}, t));
      const double v_root = std::sqrt(s[1][i]) / std::sqrt(1 - std::pow(double{r.beta2}, t));
      w[i] -= lr * m_hat / (v_root + r.eps);
    }
  };
}

} // namespace

TEST_CASE("adamw follows torch.optim.AdamW for five steps", "[optimizers][adamw]") {
  update_rule r;
  r.kind = optimizer_kind::adamw;
  SECTION("decoupled decay") {
    r.sgd.weight_decay = 0.01f;
    check_reference(r, 0.001f, true, 37, 5, adamw_reference(r, 0.001, 0.01));
  }
  SECTION("a strong decay") {
    r.sgd.weight_decay = 0.5f;
    check_reference(r, 0.1f, true, 37, 5, adamw_reference(r, 0.1, 0.5));
  }
  SECTION("decay switched off for this tensor is plain adam") {
    r.sgd.weight_decay = 0.5f;
    check_reference(r, 0.01f, false, 37, 5, adamw_reference(r, 0.01, 0));
  }
}

TEST_CASE("adamw with a zero gradient only shrinks the weights", "[optimizers][adamw]") {
  update_rule r;
  r.kind = optimizer_kind::adamw;
  tensor w = random_tensor({5}, 3), g({5}), m({5}), v({5}), out({5});
  adamw_update(r, 0.1f, 0.5f, w, g, m, v, 1, out);
  for (int i = 0; i < 5; ++i)
    CHECK(out.data()[i] == Approx(w.data()[i] * 0.95f));
}
