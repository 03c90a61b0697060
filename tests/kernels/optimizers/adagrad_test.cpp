// AdaGrad against torch.optim.Adagrad's formulas per element (lr_decay and the initial
// accumulator 0), with L2 decay in the gradient and its opt-out.
#include <catch2/catch.hpp>

#include "reference_steps.hpp"
#include <troupe/kernels/optimizers/adagrad.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

reference_step adagrad_reference(const update_rule& r, double lr, double wd) {
  return [=](std::vector<double>& w, const std::vector<double>& g,
             std::vector<std::vector<double>>& s, int) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double gi = g[i] + wd * w[i];
      s[0][i] += gi * gi;
      w[i] -= lr * gi / (std::sqrt(s[0][i]) + r.eps);
    }
  };
}

} // namespace

TEST_CASE("adagrad follows torch.optim.Adagrad for five steps", "[optimizers][adagrad]") {
  update_rule r;
  r.kind = optimizer_kind::adagrad;
  r.eps = 1e-10f;
  r.sgd.weight_decay = 0;
  SECTION("defaults") {
    check_reference(r, 0.01f, true, 37, 5, adagrad_reference(r, 0.01, 0));
  }
  SECTION("weight decay") {
    r.sgd.weight_decay = 0.1f;
    check_reference(r, 0.05f, true, 37, 5, adagrad_reference(r, 0.05, 0.1));
  }
  SECTION("weight decay switched off for this tensor") {
    r.sgd.weight_decay = 0.1f;
    check_reference(r, 0.05f, false, 37, 5, adagrad_reference(r, 0.05, 0));
  }
}
