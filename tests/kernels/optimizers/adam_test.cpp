// Adam against torch.optim.Adam's formulas written out per element: bias correction, eps
// outside the corrected square root, L2 decay in the gradient (and its opt-out), and an
// update into a buffer of its own.
#include <catch2/catch.hpp>

#include "reference_steps.hpp"
#include <troupe/kernels/optimizers/adam.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

reference_step adam_reference(const update_rule& r, double lr, double wd) {
  return [=](std::vector<double>& w, const std::vector<double>& g,
             std::vector<std::vector<double>>& s, int t) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double gi = g[i] + wd * w[i];
      s[0][i] = r.beta1 * s[0][i] + (1 - r.beta1) * gi;
      s[1][i] = r.beta2 * s[1][i] + (1 - r.beta2) * gi * gi;
      const double m_hat = s[0][i] / (1 - std::pow(double{r.beta1}, t));
      const double v_root = std::sqrt(s[1][i]) / std::sqrt(1 - std::pow(double{r.beta2}, t));
      w[i] -= lr * m_hat / (v_root + r.eps);
    }
  };
}

} // namespace

TEST_CASE("adam follows torch.optim.Adam for five steps", "[optimizers][adam]") {
  update_rule r;
  r.kind = optimizer_kind::adam;
  r.sgd.weight_decay = 0;
  SECTION("defaults") {
    check_reference(r, 0.001f, true, 37, 5, adam_reference(r, 0.001, 0));
  }
  SECTION("L2 weight decay in the gradient") {
    r.sgd.weight_decay = 0.1f;
    check_reference(r, 0.01f, true, 37, 5, adam_reference(r, 0.01, 0.1));
  }
  SECTION("weight decay switched off for this tensor") {
    r.sgd.weight_decay = 0.5f;
    check_reference(r, 0.01f, false, 37, 5, adam_reference(r, 0.01, 0));
  }
  SECTION("other betas and a large eps") {
    r.beta1 = 0.5f;
    r.beta2 = 0.9f;
    r.eps = 0.1f;
    check_reference(r, 0.05f, true, 37, 5, adam_reference(r, 0.05, 0));
  }
}

TEST_CASE("adam's first step moves each weight by lr against its gradient's sign",
          "[optimizers][adam]") {
  update_rule r;
  r.kind = optimizer_kind::adam;
  r.sgd.weight_decay = 0;
  r.eps = 0;
  tensor w({3}), g({3}), m({3}), v({3}), out({3});
  g.data()[0] = 2.0f;
  g.data()[1] = -0.001f;
  g.data()[2] = 50.0f;
  adam_update(r, 0.01f, 0, w, g, m, v, 1, out);
  CHECK(out.data()[0] == Approx(-0.01f));
  CHECK(out.data()[1] == Approx(0.01f));
  CHECK(out.data()[2] == Approx(-0.01f));
  CHECK(w.data()[0] == 0.0f); // a buffer of its own: the weights are untouched
}
