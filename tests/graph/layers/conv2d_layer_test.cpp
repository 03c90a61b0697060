// conv2d_layer: parameter shapes, names and init kinds; errors that name the layer; gradients
// through the layer (stride, padding, bias) by finite differences.
#include <catch2/catch.hpp>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/layers/conv2d_layer.hpp>

using namespace troupe;

namespace {

conv2d_layer_options options(std::int64_t out, std::int64_t kernel, std::int64_t stride,
                             std::int64_t pad, bool bias, std::int64_t groups = 1) {
  conv2d_layer_options o;
  o.out_channels = out;
  o.kernel = kernel;
  o.stride = stride;
  o.pad = pad;
  o.bias = bias;
  o.groups = groups;
  return o;
}

} // namespace

TEST_CASE("conv2d_layer builds K x C/g x R x R weights and an optional bias", "[graph][conv2d]") {
  conv2d_layer with_bias(options(4, 3, 1, 1, true));
  CHECK(with_bias.build("c", {{1, 3, 8, 8}}) == shape_t{1, 4, 8, 8});
  auto& p = with_bias.parameters();
  REQUIRE(p.size() == 2);
  CHECK(p[0].name == "c.weight");
  CHECK(p[0].value.shape() == shape_t{4, 3, 3, 3});
  CHECK(p[0].init == init_kind::he_normal);
  CHECK(p[0].weight_decay);
  CHECK(p[1].name == "c.bias");
  CHECK(p[1].value.shape() == shape_t{4});
  CHECK(p[1].init == init_kind::zeros);
  CHECK_FALSE(p[1].weight_decay);

  conv2d_layer grouped(options(6, 3, 2, 0, false, 2));
  CHECK(grouped.build("g", {{1, 4, 9, 9}}) == shape_t{1, 6, 4, 4});
  REQUIRE(grouped.parameters().size() == 1);
  CHECK(grouped.parameters()[0].value.shape() == shape_t{6, 2, 3, 3});
}

TEST_CASE("conv2d_layer rejects bad inputs naming the layer", "[graph][conv2d]") {
  conv2d_layer flat(options(4, 3, 1, 1, false));
  CHECK_THROWS_WITH(flat.build("conv7", {{1, 784}}),
                    Catch::Contains("layer 'conv7' (conv2d)") && Catch::Contains("rank 4"));
  conv2d_layer groups(options(4, 3, 1, 1, false, 3));
  CHECK_THROWS_WITH(groups.build("conv8", {{1, 4, 8, 8}}), Catch::Contains("conv8"));
  conv2d_layer too_big(options(4, 7, 1, 0, false));
  CHECK_THROWS_AS(too_big.build("conv9", {{1, 3, 4, 4}}), std::invalid_argument);
  CHECK_THROWS_WITH(too_big.build("conv9", {{1, 3, 4, 4}}), Catch::Contains("conv9"));
  conv2d_layer two_inputs(options(4, 3, 1, 1, false));
  CHECK_THROWS_WITH(two_inputs.build("c", {{1, 3, 4, 4}, {1, 3, 4, 4}}),
                    Catch::Contains("expects 1 input"));
}

TEST_CASE("conv2d_layer gradients match finite differences", "[graph][conv2d]") {
  conv2d_layer conv(options(2, 3, 2, 1, true));
  const shape_t x_shape{2, 3, 5, 5};
  shape_t y_shape = conv.build("c", {x_shape});
  conv.parameters()[0].value = test::random_tensor({2, 3, 3, 3}, 1);
  conv.parameters()[1].value = test::random_tensor({2}, 2);
  test::check_layer_gradients({conv, {test::random_tensor(x_shape, 3)}, y_shape}, 4);
}

TEST_CASE("conv2d_layer computes weight gradients without dx", "[graph][conv2d]") {
  conv2d_layer conv(options(3, 3, 1, 1, false));
  const shape_t x_shape{2, 2, 4, 4};
  shape_t y_shape = conv.build("c", {x_shape});
  auto& w = conv.parameters()[0];
  w.value = test::random_tensor(w.value.shape(), 5);
  tensor x = test::random_tensor(x_shape, 6), dy = test::random_tensor(y_shape, 7);
  tensor y(y_shape), dx(x_shape);
  conv.forward({&x}, y, true);
  w.grad = tensor(w.value.shape());
  conv.backward({&x}, y, dy, {&dx});
  tensor with_dx = w.grad.clone();
  w.grad = tensor(w.value.shape());
  conv.backward({&x}, y, dy, {nullptr});
  for (std::int64_t i = 0; i < with_dx.numel(); ++i)
    CHECK(w.grad.data()[i] == Approx(with_dx.data()[i]));
}
