// The parameter-free layers: ReLU, add, concat, flatten and the option-A shortcut. Shapes,
// errors naming the layer, gradients by finite differences, flatten's view semantics, and
// backward with inputs whose gradient is not needed.
#include <catch2/catch.hpp>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/layers/elementwise_layers.hpp>

using namespace troupe;

TEST_CASE("relu_layer keeps the shape and passes gradients where positive", "[graph][relu]") {
  relu_layer relu;
  const shape_t shape{2, 3, 2, 2};
  CHECK(relu.build("r", {shape}) == shape);
  CHECK(relu.parameters().empty());
  test::check_layer_gradients({relu, {test::spread_tensor(shape, 1)}, shape}, 2);
}

TEST_CASE("add_layer sums two inputs of one shape", "[graph][add]") {
  add_layer add;
  const shape_t shape{2, 3, 2, 2};
  CHECK(add.build("sum", {shape, shape}) == shape);
  test::check_layer_gradients(
    {add, {test::random_tensor(shape, 1), test::random_tensor(shape, 2)}, shape}, 3);

  add_layer bad;
  CHECK_THROWS_WITH(bad.build("block1.add", {{1, 16, 8, 8}, {1, 32, 4, 4}}),
                    Catch::Contains("layer 'block1.add' (add)") && Catch::Contains("[1, 16, 8, 8]")
                      && Catch::Contains("[1, 32, 4, 4]"));
  CHECK_THROWS_WITH(bad.build("one", {shape}), Catch::Contains("expects 2 input"));
}

TEST_CASE("add_layer backward skips inputs whose gradient is not needed", "[graph][add]") {
  add_layer add;
  const shape_t shape{1, 4};
  add.build("sum", {shape, shape});
  tensor a = test::random_tensor(shape, 1), b = test::random_tensor(shape, 2), y(shape);
  add.forward({&a, &b}, y, true);
  tensor dy = test::random_tensor(shape, 3), db(shape);
  add.backward({&a, &b}, y, dy, {nullptr, &db});
  for (int i = 0; i < 4; ++i)
    CHECK(db.data()[i] == dy.data()[i]);
}

TEST_CASE("concat_layer joins inputs along channels", "[graph][concat]") {
  concat_layer concat;
  const shape_t a{2, 1, 3, 3}, b{2, 2, 3, 3}, c{2, 3, 3, 3};
  CHECK(concat.build("cat", {a, b, c}) == shape_t{2, 6, 3, 3});
  test::check_layer_gradients(
    {concat,
     {test::random_tensor(a, 1), test::random_tensor(b, 2), test::random_tensor(c, 3)},
     {2, 6, 3, 3}},
    4);
  concat_layer bad;
  CHECK_THROWS_WITH(bad.build("in3a.concat", {{1, 2, 4, 4}, {1, 2, 3, 3}}),
                    Catch::Contains("layer 'in3a.concat' (concat)"));
}

TEST_CASE("concat_layer backward fills only the needed inputs", "[graph][concat]") {
  concat_layer concat;
  const shape_t a{1, 1, 2, 2}, b{1, 2, 2, 2};
  concat.build("cat", {a, b});
  tensor xa = test::random_tensor(a, 1), xb = test::random_tensor(b, 2), y({1, 3, 2, 2});
  concat.forward({&xa, &xb}, y, true);
  tensor dy = test::random_tensor({1, 3, 2, 2}, 3), db(b);
  concat.backward({&xa, &xb}, y, dy, {nullptr, &db});
  for (int i = 0; i < 8; ++i)
    CHECK(db.data()[i] == dy.data()[4 + i]);
}

TEST_CASE("flatten_layer is a view forward and a copy backward", "[graph][flatten]") {
  flatten_layer flatten;
  const shape_t shape{2, 3, 2, 2};
  CHECK(flatten.build("flat", {shape}) == shape_t{2, 12});
  tensor x = test::random_tensor(shape, 1), y;
  flatten.forward({&x}, y, true);
  CHECK(y.shape() == shape_t{2, 12});
  CHECK(y.shares_storage_with(x));
  tensor dy = test::random_tensor({2, 12}, 2), dx(shape);
  flatten.backward({&x}, y, dy, {&dx});
  CHECK_FALSE(dx.shares_storage_with(dy));
  for (int i = 0; i < 24; ++i)
    CHECK(dx.data()[i] == dy.data()[i]);
}

TEST_CASE("shortcut_pad_layer subsamples and pads channels", "[graph][shortcut]") {
  shortcut_pad_layer pad(8, 2);
  const shape_t shape{2, 4, 4, 4};
  CHECK(pad.build("stage2.block1.shortcut", {shape}) == shape_t{2, 8, 2, 2});
  CHECK(pad.parameters().empty());
  test::check_layer_gradients({pad, {test::random_tensor(shape, 1)}, {2, 8, 2, 2}}, 2);

  shortcut_pad_layer narrow(2, 1);
  CHECK_THROWS_WITH(narrow.build("s", {shape}), Catch::Contains("layer 's' (shortcut_pad)"));
}
