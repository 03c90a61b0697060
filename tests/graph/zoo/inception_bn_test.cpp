// Inception-BN: the small CIFAR network (1,652,826 parameters for 3x28x28, 10 classes) on
// 28x28 and 32x32 inputs, and BN-Inception for 224x224 (11,295,240 parameters, 1000 classes;
// both counts include MXNet's conv biases and BN gamma / beta).
#include <catch2/catch.hpp>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/zoo.hpp>

using namespace troupe;

namespace {

model_spec inception_spec(shape_t sample, int classes = 10) {
  model_spec spec;
  spec.network = "inception-bn";
  spec.sample_shape = std::move(sample);
  spec.classes = classes;
  return spec;
}

} // namespace

TEST_CASE("small inception-bn counts and shapes", "[graph][zoo][inception]") {
  auto m = build_model(inception_spec({3, 28, 28}));
  CHECK(m->name() == "inception-bn-small");
  CHECK(m->parameter_count() == 1652826);
  const std::string summary = m->summary();
  CHECK_THAT(summary, Catch::Contains("in3c.concat"));
  CHECK_THAT(summary, Catch::Contains("[N, 336, 7, 7]")); // in5b: 176 + 160 channels at 7x7
  tensor x = test::random_tensor({2, 3, 28, 28}, 1);
  CHECK(m->forward(x, false).shape() == shape_t{2, 10});
  CHECK(m->train_step(x, {0, 9}).count == 2);

  auto cifar = build_model(inception_spec({3, 32, 32}));
  CHECK(cifar->parameter_count() == 1652826);
  CHECK(cifar->forward(test::random_tensor({2, 3, 32, 32}, 2), false).shape() == shape_t{2, 10});
}

TEST_CASE("BN-Inception for 224x224 counts and shapes", "[graph][zoo][inception]") {
  auto m = build_model(inception_spec({3, 224, 224}, 1000));
  CHECK(m->name() == "inception-bn");
  CHECK(m->parameter_count() == 11295240);
  const std::string summary = m->summary();
  CHECK_THAT(summary, Catch::Contains("[N, 192, 28, 28]")); // pool2
  CHECK_THAT(summary, Catch::Contains("[N, 576, 14, 14]")); // in3c
  CHECK_THAT(summary, Catch::Contains("[N, 1024, 7, 7]"));  // in5b
  CHECK(m->forward(test::random_tensor({1, 3, 224, 224}, 3), false).shape() == shape_t{1, 1000});
}
