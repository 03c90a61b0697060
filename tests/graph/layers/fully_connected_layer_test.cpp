// fully_connected_layer: weight [OUT, IN] with IN flattened from the input, configurable init,
// optional bias without weight decay, errors naming the layer, gradients by finite differences.
#include <catch2/catch.hpp>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/layers/fully_connected_layer.hpp>

using namespace troupe;

TEST_CASE("fully_connected_layer flattens its input into the weight", "[graph][fc]") {
  fully_connected_layer fc(5);
  CHECK(fc.build("fc1", {{1, 2, 3, 3}}) == shape_t{1, 5});
  auto& p = fc.parameters();
  REQUIRE(p.size() == 2);
  CHECK(p[0].name == "fc1.weight");
  CHECK(p[0].value.shape() == shape_t{5, 18});
  CHECK(p[0].init == init_kind::xavier_uniform);
  CHECK(p[0].weight_decay);
  CHECK(p[1].name == "fc1.bias");
  CHECK(p[1].value.shape() == shape_t{5});
  CHECK(p[1].init == init_kind::zeros);
  CHECK_FALSE(p[1].weight_decay);

  fully_connected_layer he(3, init_kind::he_normal, false);
  CHECK(he.build("fc2", {{1, 7}}) == shape_t{1, 3});
  REQUIRE(he.parameters().size() == 1);
  CHECK(he.parameters()[0].init == init_kind::he_normal);
}

TEST_CASE("fully_connected_layer rejects bad inputs naming the layer", "[graph][fc]") {
  fully_connected_layer fc(5);
  CHECK_THROWS_WITH(fc.build("head", {{7}}), Catch::Contains("layer 'head' (fully_connected)"));
  fully_connected_layer none(0);
  CHECK_THROWS_WITH(none.build("empty", {{1, 7}}), Catch::Contains("layer 'empty'"));
}

TEST_CASE("fully_connected_layer gradients match finite differences", "[graph][fc]") {
  fully_connected_layer fc(4);
  const shape_t x_shape{3, 2, 2, 2};
  shape_t y_shape = fc.build("fc", {x_shape});
  CHECK(y_shape == shape_t{3, 4});
  fc.parameters()[0].value = test::random_tensor({4, 8}, 1);
  fc.parameters()[1].value = test::random_tensor({4}, 2);
  test::check_layer_gradients({fc, {test::random_tensor(x_shape, 3)}, y_shape}, 4);
}
