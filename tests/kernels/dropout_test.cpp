// dropout_op: the keep rate and scaling, identity in inference, a mask that depends only on
// the seed and the call count (not on the thread count), a backward that reuses the mask, a
// finite-difference check with the mask held fixed, and parameter validation.
#include <catch2/catch.hpp>

#include "test_util.hpp"
#include <troupe/kernels/dropout.hpp>
#include <troupe/kernels/threading.hpp>

using namespace troupe;
using namespace troupe::test;

TEST_CASE("dropout zeroes about p of the elements and scales the rest", "[dropout]") {
  dropout_op op(0.3f, 42);
  shape_t s{4, 50000};
  tensor x = random_tensor(s, 1, 0.5f, 1.0f), y(s);
  op.forward(x, y, true);
  std::int64_t dropped = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (y.data()[i] == 0.0f)
      ++dropped;
    else
      REQUIRE(y.data()[i] == Approx(x.data()[i] / 0.7f).epsilon(1e-6));
  }
  double rate = static_cast<double>(dropped) / static_cast<double>(x.numel());
  CHECK(rate == Approx(0.3).margin(0.005));

  tensor dy = random_tensor(s, 2), dx(s);
  op.backward(dy, dx);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    REQUIRE(dx.data()[i] == Approx(y.data()[i] == 0.0f ? 0.0f : dy.data()[i] / 0.7f).epsilon(1e-6));
}

TEST_CASE("dropout is the identity in inference and with p = 0", "[dropout]") {
  tensor x = random_tensor({3, 7}, 1), y({3, 7});
  dropout_op op(0.5f, 1);
  op.forward(x, y, false);
  require_close(y, x, 0, 0);
  dropout_op none(0.0f, 1);
  none.forward(x, y, true);
  require_close(y, x, 0, 0);
}

TEST_CASE("dropout masks depend on seed and call count, not threads", "[dropout]") {
  shape_t s{2, 100000};
  tensor x = random_tensor(s, 1, 0.5f, 1.0f);
  auto run = [&](int threads, std::uint64_t seed, int calls) {
    int before = compute_threads();
    set_compute_threads(threads);
    dropout_op op(0.5f, seed);
    tensor y(s);
    for (int i = 0; i < calls; ++i)
      op.forward(x, y, true);
    set_compute_threads(before);
    return y;
  };
  tensor one = run(1, 7, 1), two = run(2, 7, 1);
  require_close(one, two, 0, 0);
  tensor other_seed = run(2, 8, 1), second_call = run(2, 7, 2);
  CHECK(weighted_sum(one, one) != Approx(weighted_sum(other_seed, one)));
  CHECK(weighted_sum(one, one) != Approx(weighted_sum(second_call, one)));
}

TEST_CASE("dropout gradient matches finite differences with the mask fixed",
          "[dropout][gradient]") {
  shape_t s{3, 8};
  tensor x = random_tensor(s, 1), r = random_tensor(s, 2), y(s), dx(s);
  // A fresh op with the same seed reproduces the first call's mask on every evaluation.
  auto objective = [&] {
    dropout_op op(0.4f, 99);
    op.forward(x, y, true);
    return weighted_sum(y, r);
  };
  dropout_op op(0.4f, 99);
  op.forward(x, y, true);
  op.backward(r, dx);
  check_gradient("x", x, dx, objective);
}

TEST_CASE("dropout validates its arguments", "[dropout][errors]") {
  REQUIRE_THROWS_WITH(dropout_op(1.0f, 0), Catch::Contains("probability"));
  REQUIRE_THROWS_AS(dropout_op(-0.1f, 0), std::invalid_argument);
  dropout_op op(0.5f, 0);
  tensor x({2, 3}), y({3, 2});
  REQUIRE_THROWS_WITH(op.forward(x, y, true),
                      Catch::Contains("[2, 3]") && Catch::Contains("[3, 2]"));
  tensor dy({4, 4}), dx({4, 4});
  REQUIRE_THROWS_AS(op.backward(dy, dx), std::logic_error);
}
