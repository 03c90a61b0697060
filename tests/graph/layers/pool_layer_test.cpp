// pool_layer: output shapes of max / average / global pooling (floor and ceil rounding),
// errors that name the layer, and gradients by finite differences.
#include <catch2/catch.hpp>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/layers/pool_layer.hpp>

using namespace troupe;

TEST_CASE("pool_layer output shapes and kinds", "[graph][pool]") {
  pool_layer max2(pool_layer::square(pool_kind::max, 2, 2));
  CHECK(max2.kind() == "max_pool");
  CHECK(max2.build("p", {{1, 2, 6, 6}}) == shape_t{1, 2, 3, 3});
  CHECK(max2.parameters().empty());

  pool_layer avg_same(pool_layer::square(pool_kind::average, 3, 1, 1));
  CHECK(avg_same.kind() == "avg_pool");
  CHECK(avg_same.build("p", {{1, 2, 7, 7}}) == shape_t{1, 2, 7, 7});

  pool_layer global(pool_layer::global_average());
  CHECK(global.kind() == "global_avg_pool");
  CHECK(global.build("p", {{1, 5, 7, 9}}) == shape_t{1, 5, 1, 1});

  // MXNet's "full" convention rounds up: 3x3/2 on 28 gives 14 instead of 13.
  pool_layer floor_mode(pool_layer::square(pool_kind::max, 3, 2, 0, false));
  pool_layer ceil_mode(pool_layer::square(pool_kind::max, 3, 2, 0, true));
  CHECK(floor_mode.build("p", {{1, 1, 28, 28}}) == shape_t{1, 1, 13, 13});
  CHECK(ceil_mode.build("p", {{1, 1, 28, 28}}) == shape_t{1, 1, 14, 14});
}

TEST_CASE("pool_layer rejects bad inputs naming the layer", "[graph][pool]") {
  pool_layer big(pool_layer::square(pool_kind::max, 5, 1));
  CHECK_THROWS_WITH(big.build("pool3", {{1, 2, 3, 3}}), Catch::Contains("layer 'pool3'"));
  pool_layer flat(pool_layer::square(pool_kind::max, 2, 2));
  CHECK_THROWS_WITH(flat.build("pool4", {{1, 10}}), Catch::Contains("layer 'pool4'"));
}

TEST_CASE("pool_layer gradients match finite differences", "[graph][pool]") {
  const shape_t x_shape{2, 2, 4, 4};
  SECTION("max") {
    pool_layer pool(pool_layer::square(pool_kind::max, 2, 2));
    shape_t y_shape = pool.build("p", {x_shape});
    test::check_layer_gradients({pool, {test::spread_tensor(x_shape, 1)}, y_shape}, 2, 1e-2);
  }
  SECTION("average with padding") {
    pool_layer pool(pool_layer::square(pool_kind::average, 3, 2, 1));
    shape_t y_shape = pool.build("p", {x_shape});
    test::check_layer_gradients({pool, {test::random_tensor(x_shape, 3)}, y_shape}, 4);
  }
  SECTION("global average") {
    pool_layer pool(pool_layer::global_average());
    shape_t y_shape = pool.build("p", {x_shape});
    test::check_layer_gradients({pool, {test::random_tensor(x_shape, 5)}, y_shape}, 6);
  }
}
