// RMSProp against torch.optim.RMSprop's formulas per element (not centered), with and without
// momentum, with L2 decay in the gradient.
#include <catch2/catch.hpp>

#include "reference_steps.hpp"
#include <troupe/kernels/optimizers/rmsprop.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

reference_step rmsprop_reference(const update_rule& r, double lr, double wd) {
  return [=](std::vector<double>& w, const std::vector<double>& g,
             std::vector<std::vector<double>>& s, int) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double gi = g[i] + wd * w[i];
      s[0][i] = r.alpha * s[0][i] + (1 - r.alpha) * gi * gi;
      const double avg = std::sqrt(s[0][i]) + r.eps;
      if (r.sgd.momentum > 0) {
        s[1][i] = r.sgd.momentum * s[1][i] + gi / avg;
        w[i] -= lr * s[1][i];
      } else {
        w[i] -= lr * gi / avg;
      }
    }
  };
}

} // namespace

TEST_CASE("rmsprop follows torch.optim.RMSprop for five steps", "[optimizers][rmsprop]") {
  update_rule r;
  r.kind = optimizer_kind::rmsprop;
  r.sgd.weight_decay = 0;
  SECTION("no momentum (PyTorch's default)") {
    r.sgd.momentum = 0;
    check_reference(r, 0.01f, true, 37, 5, rmsprop_reference(r, 0.01, 0));
  }
  SECTION("momentum and weight decay") {
    r.sgd.momentum = 0.9f;
    r.sgd.weight_decay = 0.01f;
    check_reference(r, 0.01f, true, 37, 5, rmsprop_reference(r, 0.01, 0.01));
  }
  SECTION("another alpha and eps") {
    r.sgd.momentum = 0;
    r.alpha = 0.5f;
    r.eps = 0.01f;
    check_reference(r, 0.001f, true, 37, 5, rmsprop_reference(r, 0.001, 0));
  }
}
