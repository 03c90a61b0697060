// LARS against You, Gitman and Ginsburg's update written out over the whole key: the layer-wise
// rate from the norms of the weights and the gradient, momentum on the scaled step, and rate 1
// when the weights are zero.
#include <catch2/catch.hpp>

#include "reference_steps.hpp"
#include <troupe/kernels/optimizers/lars.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

reference_step lars_reference(const update_rule& r, double lr, double wd) {
  return [=](std::vector<double>& w, const std::vector<double>& g,
             std::vector<std::vector<double>>& s, int) {
    double w_norm = 0, g_norm = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      w_norm += w[i] * w[i];
      g_norm += g[i] * g[i];
    }
    w_norm = std::sqrt(w_norm);
    g_norm = std::sqrt(g_norm);
    const double local =
      w_norm > 0 && g_norm > 0 ? r.trust * w_norm / (g_norm + wd * w_norm + r.eps) : 1.0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      s[0][i] = r.sgd.momentum * s[0][i] + lr * local * (g[i] + wd * w[i]);
      w[i] -= s[0][i];
    }
  };
}

} // namespace

TEST_CASE("lars follows You et al.'s update for five steps", "[optimizers][lars]") {
  update_rule r;
  r.kind = optimizer_kind::lars;
  r.sgd.momentum = 0.9f;
  SECTION("momentum and weight decay") {
    r.sgd.weight_decay = 5e-4f;
    check_reference(r, 1.0f, true, 37, 5, lars_reference(r, 1.0, 5e-4));
  }
  SECTION("a large trust coefficient, decay switched off for this tensor") {
    r.sgd.weight_decay = 0.5f;
    r.trust = 0.1f;
    check_reference(r, 0.5f, false, 37, 5, lars_reference(r, 0.5, 0));
  }
}

TEST_CASE("lars moves zero weights at the global rate", "[optimizers][lars]") {
  update_rule r;
  r.kind = optimizer_kind::lars;
  r.sgd.weight_decay = 0;
  tensor w({4}), b({4}), out({4});
  const tensor g = tensor::from_values({4}, {1, -1, 2, 0});
  lars_update(r, 0.1f, 0, w, g, b, out);
  CHECK(out.data()[0] == Approx(-0.1f));
  CHECK(out.data()[2] == Approx(-0.2f));
  CHECK(out.data()[3] == 0.0f);
}
