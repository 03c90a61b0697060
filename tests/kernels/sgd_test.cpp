// sgd_update step by step against PyTorch's formulas written out in double: plain momentum,
// weight decay (and its opt-out for biases), Nesterov, out-of-place output, large tensors on
// the threaded path, and shape errors.
#include <catch2/catch.hpp>

#include "test_util.hpp"
#include <troupe/kernels/sgd.hpp>

using namespace troupe;
using namespace troupe::test;

namespace {

// Runs `steps` updates with fresh gradients and compares with the formulas in double.
void check_steps(const sgd_options& o, bool decay, std::int64_t n, int steps) {
  tensor w = random_tensor({n}, 1), v({n});
  std::vector<double> ref_w = to_double(w), ref_v(static_cast<std::size_t>(n), 0.0);
  const double lr = 0.05;
  const double wd = decay ? o.weight_decay : 0.0;
  for (int s = 0; s < steps; ++s) {
    tensor g = random_tensor({n}, 100 + s);
    sgd_update(o, static_cast<float>(lr), w, g, v, w, decay);
    for (std::int64_t i = 0; i < n; ++i) {
      double gi = g.data()[i] + wd * ref_w[i];
      ref_v[i] = o.momentum * ref_v[i] + gi;
      double step = o.nesterov ? gi + o.momentum * ref_v[i] : ref_v[i];
      ref_w[i] -= lr * step;
    }
  }
  require_close(w, ref_w, 1e-5, 1e-6);
  require_close(v, ref_v, 1e-5, 1e-6);
}

} // namespace

TEST_CASE("sgd_update follows PyTorch's formulation", "[sgd]") {
  sgd_options o;
  SECTION("momentum only") {
    check_steps(o, true, 37, 4);
  }
  SECTION("momentum and weight decay") {
    o.weight_decay = 0.01f;
    check_steps(o, true, 37, 4);
  }
  SECTION("weight decay switched off for this tensor") {
    o.weight_decay = 0.5f;
    check_steps(o, false, 37, 4);
  }
  SECTION("nesterov") {
    o.nesterov = true;
    o.weight_decay = 1e-3f;
    check_steps(o, true, 37, 4);
  }
  SECTION("no momentum is plain gradient descent") {
    o.momentum = 0;
    check_steps(o, true, 37, 2);
  }
  SECTION("large tensor on the threaded path") {
    o.weight_decay = 1e-4f;
    check_steps(o, true, 300001, 2);
  }
}

TEST_CASE("sgd_update out of place leaves the old weights alone", "[sgd]") {
  sgd_options o;
  o.weight_decay = 0.1f;
  tensor w = random_tensor({5, 4}, 1), g = random_tensor({5, 4}, 2), v({5, 4}), out({5, 4});
  tensor w_before = w.clone();
  sgd_update(o, 0.1f, w, g, v, out);
  require_close(w, w_before, 0, 0);
  tensor w_in_place = w.clone(), v2({5, 4});
  sgd_update(o, 0.1f, w_in_place, g, v2, w_in_place);
  require_close(out, w_in_place, 0, 0);
  require_close(v, v2, 0, 0);
}

TEST_CASE("sgd_update rejects mismatched shapes", "[sgd][errors]") {
  sgd_options o;
  tensor w({3, 4}), g({4, 3}), v({3, 4}), out({3, 4});
  REQUIRE_THROWS_WITH(sgd_update(o, 0.1f, w, g, v, out),
                      Catch::Contains("[4, 3]") && Catch::Contains("[3, 4]"));
  tensor v_bad({12});
  REQUIRE_THROWS_WITH(sgd_update(o, 0.1f, w, w, v_bad, out), Catch::Contains("velocity"));
}
