// LAMB against You et al.'s Algorithm 2 written out over the whole key: bias-corrected Adam
// direction, decoupled decay, and the trust ratio of the key's norms (1 when the weights are
// zero).
#include <catch2/catch.hpp>

#include "reference_steps.hpp"
#include <troupe/kernels/optimizers/lamb.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

reference_step lamb_reference(const update_rule& r, double lr, double wd) {
  return [=](std::vector<double>& w, const std::vector<double>& g,
             std::vector<std::vector<double>>& s, int t) {
    std::vector<double> u(w.size());
    double w_norm = 0, u_norm = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      s[0][i] = r.beta1 * s[0][i] + (1 - r.beta1) * g[i];
      s[1][i] = r.beta2 * s[1][i] + (1 - r.beta2) * g[i] * g[i];
      const double m_hat = s[0][i] / (1 - std::pow(double{r.beta1}, t));
      const double v_hat = s[1][i] / (1 - std::pow(double{r.beta2}, t));
      u[i] = m_hat / (std::sqrt(v_hat) + r.eps) + wd * w[i];
      w_norm += w[i] * w[i];
      u_norm += u[i] * u[i];
    }
    const double trust = w_norm > 0 && u_norm > 0 ? std::sqrt(w_norm / u_norm) : 1.0;
    for (std::size_t i = 0; i < w.size(); ++i)
      w[i] -= lr * trust * u[i];
  };
}

} // namespace

TEST_CASE("lamb follows You et al.'s algorithm for five steps", "[optimizers][lamb]") {
  update_rule r;
  r.kind = optimizer_kind::lamb;
  r.eps = 1e-6f;
  SECTION("decoupled decay") {
    r.sgd.weight_decay = 0.01f;
    check_reference(r, 0.01f, true, 37, 5, lamb_reference(r, 0.01, 0.01));
  }
  SECTION("no decay") {
    r.sgd.weight_decay = 0.5f;
    check_reference(r, 0.01f, false, 37, 5, lamb_reference(r, 0.01, 0));
  }
}

TEST_CASE("lamb's step is lr times the weights' norm, and lr alone from zero weights",
          "[optimizers][lamb]") {
  update_rule r;
  r.kind = optimizer_kind::lamb;
  r.sgd.weight_decay = 0;
  tensor g = random_tensor({16}, 7), m({16}), v({16}), out({16});
  SECTION("the trust ratio scales the step to |w| * lr") {
    tensor w = random_tensor({16}, 8);
    lamb_update(r, 0.1f, 0, w, g, m, v, 1, out);
    double w_norm = 0, step_norm = 0;
    for (int i = 0; i < 16; ++i) {
      w_norm += double{w.data()[i]} * w.data()[i];
      const double d = double{out.data()[i]} - w.data()[i];
      step_norm += d * d;
    }
    CHECK(std::sqrt(step_norm) == Approx(0.1 * std::sqrt(w_norm)).epsilon(1e-4));
  }
  SECTION("zero weights: trust 1") {
    tensor w({16});
    lamb_update(r, 0.1f, 0, w, g, m, v, 1, out);
    for (int i = 0; i < 16; ++i) // the first step's direction is sign(g) (eps aside)
      CHECK(std::abs(out.data()[i]) == Approx(0.1).epsilon(1e-4));
  }
}
