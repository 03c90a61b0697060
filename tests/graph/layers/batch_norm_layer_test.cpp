// batch_norm_layer: gamma / beta parameters without weight decay, running-statistics buffers,
// training gradients by finite differences, inference with the running statistics.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/layers/batch_norm_layer.hpp>

using namespace troupe;

TEST_CASE("batch_norm_layer creates gamma, beta and running statistics", "[graph][batch_norm]") {
  batch_norm_layer bn;
  CHECK(bn.build("bn1", {{1, 3, 4, 4}}) == shape_t{1, 3, 4, 4});
  auto& p = bn.parameters();
  REQUIRE(p.size() == 2);
  CHECK(p[0].name == "bn1.gamma");
  CHECK(p[0].init == init_kind::ones);
  CHECK(p[1].name == "bn1.beta");
  CHECK(p[1].init == init_kind::zeros);
  for (auto& q : p) {
    CHECK(q.value.shape() == shape_t{3});
    CHECK_FALSE(q.weight_decay);
  }
  auto& b = bn.buffers();
  REQUIRE(b.size() == 2);
  CHECK(b[0].name == "bn1.running_mean");
  CHECK(b[1].name == "bn1.running_var");
  for (int c = 0; c < 3; ++c) {
    CHECK(b[0].value.data()[c] == 0.0f);
    CHECK(b[1].value.data()[c] == 1.0f);
  }
  batch_norm_layer nc;
  CHECK(nc.build("bn2", {{1, 5}}) == shape_t{1, 5});
  batch_norm_layer bad;
  CHECK_THROWS_WITH(bad.build("bn3", {{1, 3, 4}}), Catch::Contains("layer 'bn3' (batch_norm)"));
}

TEST_CASE("batch_norm_layer training gradients match finite differences", "[graph][batch_norm]") {
  batch_norm_layer bn;
  const shape_t x_shape{4, 3, 2, 2};
  shape_t y_shape = bn.build("bn", {x_shape});
  bn.parameters()[0].value = test::random_tensor({3}, 1, 0.5f, 1.5f);
  bn.parameters()[1].value = test::random_tensor({3}, 2);
  test::check_layer_gradients({bn, {test::random_tensor(x_shape, 3)}, y_shape}, 4, 1e-2, 3e-3,
                              3e-2);
}

TEST_CASE("batch_norm_layer infers with the running statistics", "[graph][batch_norm]") {
  batch_norm_layer bn;
  const shape_t x_shape{8, 2, 3, 3};
  bn.build("bn", {x_shape});
  bn.parameters()[0].value = tensor::from_values({2}, {2.0f, 0.5f});
  bn.parameters()[1].value = tensor::from_values({2}, {0.1f, -0.2f});
  tensor x = test::random_tensor(x_shape, 9, 1.0f, 3.0f);
  tensor y(x_shape);
  for (int i = 0; i < 3; ++i)
    bn.forward({&x}, y, true);
  const tensor& mean = bn.buffers()[0].value;
  const tensor& var = bn.buffers()[1].value;
  CHECK(mean.data()[0] > 0.5f); // moved from 0 towards the batch mean (~2)

  bn.forward({&x}, y, false);
  for (std::int64_t i : {0, 17, 40, 143}) {
    const int c = static_cast<int>((i / 9) % 2);
    const float gamma = bn.parameters()[0].value.data()[c];
    const float beta = bn.parameters()[1].value.data()[c];
    const float expected =
      gamma * (x.data()[i] - mean.data()[c]) / std::sqrt(var.data()[c] + 1e-5f) + beta;
    CHECK(y.data()[i] == Approx(expected).margin(1e-4));
  }
}

TEST_CASE("batch_norm_layer backward works without dx", "[graph][batch_norm]") {
  batch_norm_layer bn;
  const shape_t x_shape{4, 2};
  bn.build("bn", {x_shape});
  tensor x = test::random_tensor(x_shape, 1), y(x_shape), dy = test::random_tensor(x_shape, 2);
  for (auto& p : bn.parameters())
    p.value = test::random_tensor(p.value.shape(), 3);
  bn.forward({&x}, y, true);
  for (auto& p : bn.parameters())
    p.grad = tensor(p.value.shape());
  bn.backward({&x}, y, dy, {nullptr});
  CHECK(bn.parameters()[1].grad.data()[0]
        == Approx(dy.data()[0] + dy.data()[2] + dy.data()[4] + dy.data()[6]));
}
