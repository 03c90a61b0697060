// dropout_layer: identity in inference; in training a seeded mask zeroes about p of the
// elements and scales the rest by 1/(1-p); set_seed fixes the mask; backward applies it.
#include <catch2/catch.hpp>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/layers/dropout_layer.hpp>

using namespace troupe;

namespace {

tensor run(dropout_layer& d, const tensor& x, bool training) {
  tensor y(x.shape());
  d.forward({&x}, y, training);
  return y;
}

} // namespace

TEST_CASE("dropout_layer is the identity in inference", "[graph][dropout]") {
  dropout_layer d(0.5f);
  CHECK(d.build("drop", {{1, 100}}) == shape_t{1, 100});
  CHECK(d.parameters().empty());
  tensor x = test::random_tensor({4, 100}, 1);
  tensor y = run(d, x, false);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    CHECK(y.data()[i] == x.data()[i]);
}

TEST_CASE("dropout_layer drops about p in training and its seed fixes the mask",
          "[graph][dropout]") {
  const shape_t shape{8, 1000};
  tensor x(shape);
  x.fill(1.0f);
  dropout_layer a(0.25f), b(0.25f), c(0.25f);
  for (auto* d : {&a, &b, &c})
    d->build("drop", {shape});
  a.set_seed(7);
  b.set_seed(7);
  c.set_seed(8);
  tensor ya = run(a, x, true), yb = run(b, x, true), yc = run(c, x, true);
  std::int64_t zeros = 0, differ = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const float v = ya.data()[i];
    CHECK((v == 0.0f || v == Approx(1.0f / 0.75f)));
    zeros += v == 0.0f;
    CHECK(yb.data()[i] == v);
    differ += yc.data()[i] != v;
  }
  CHECK(zeros == Approx(0.25 * x.numel()).epsilon(0.1));
  CHECK(differ > 0);
}

TEST_CASE("dropout_layer backward applies the forward mask", "[graph][dropout]") {
  const shape_t shape{2, 50};
  dropout_layer d(0.5f);
  d.build("drop", {shape});
  d.set_seed(3);
  tensor x = test::random_tensor(shape, 1);
  tensor y = run(d, x, true);
  tensor dy = test::random_tensor(shape, 2), dx(shape);
  d.backward({&x}, y, dy, {&dx});
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const float scale = y.data()[i] == 0.0f ? 0.0f : 2.0f;
    CHECK(dx.data()[i] == Approx(dy.data()[i] * scale));
  }
}

TEST_CASE("dropout_layer rejects a probability outside 0 <= p < 1", "[graph][dropout]") {
  CHECK_THROWS_AS(dropout_layer(1.0f), std::invalid_argument);
  CHECK_THROWS_AS(dropout_layer(-0.1f), std::invalid_argument);
}
