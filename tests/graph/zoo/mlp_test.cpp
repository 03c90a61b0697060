// The MNIST MLP: 109,386 parameters for 1x28x28, output [N, 10], Xavier-initialized weights.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/zoo.hpp>

using namespace troupe;

TEST_CASE("mlp has MXNet's 784-128-64-10 shape", "[graph][zoo][mlp]") {
  model_spec spec;
  spec.network = "mlp";
  auto m = build_model(spec);
  CHECK(m->parameter_count() == 109386);
  CHECK(m->parameters()[m->parameter_index("fc1.weight")]->value.shape() == shape_t{128, 784});
  CHECK(m->parameters()[m->parameter_index("fc3.weight")]->value.shape() == shape_t{10, 64});
  CHECK(m->parameters()[0]->init == init_kind::xavier_uniform);
  CHECK(m->forward(test::random_tensor({2, 1, 28, 28}, 1), false).shape() == shape_t{2, 10});
}

TEST_CASE("mlp takes any sample shape and class count", "[graph][zoo][mlp]") {
  model_spec spec;
  spec.network = "mlp";
  spec.sample_shape = {3, 8, 8};
  spec.classes = 4;
  auto m = build_model(spec);
  CHECK(m->parameter_count() == 192 * 128 + 128 + 128 * 64 + 64 + 64 * 4 + 4);
  CHECK(m->forward(test::random_tensor({2, 3, 8, 8}, 1), false).shape() == shape_t{2, 4});
}
