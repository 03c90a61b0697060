// VGG with batch norm: the CIFAR VGG-16 (14,728,266 parameters for 3x32x32, 10 classes), the
// ImageNet VGG-16 with its 4096-4096 head (138,365,992 parameters, 1000 classes), the other
// configurations, and the input sizes it refuses.
#include <catch2/catch.hpp>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/zoo.hpp>

using namespace troupe;

namespace {

model_spec vgg_spec(int depth, shape_t sample, int classes = 10) {
  model_spec spec;
  spec.network = "vgg";
  spec.num_layers = depth;
  spec.sample_shape = std::move(sample);
  spec.classes = classes;
  return spec;
}

} // namespace

TEST_CASE("CIFAR vgg-16 counts and shapes", "[graph][zoo][vgg]") {
  auto m = build_model(vgg_spec(0, {3, 32, 32}));
  CHECK(m->name() == "vgg-16");
  CHECK(m->parameter_count() == 14728266);
  CHECK_THAT(m->summary(), Catch::Contains("block5.conv3"));
  tensor x = test::random_tensor({2, 3, 32, 32}, 1);
  CHECK(m->forward(x, false).shape() == shape_t{2, 10});
  CHECK(m->train_step(x, {1, 8}).count == 2);
}

TEST_CASE("vgg depths pick the paper's configurations", "[graph][zoo][vgg]") {
  std::int64_t previous = 0;
  for (int depth : {11, 13, 16, 19}) {
    auto m = build_model(vgg_spec(depth, {3, 32, 32}));
    CHECK(m->name() == "vgg-" + std::to_string(depth));
    CHECK(m->parameter_count() > previous);
    previous = m->parameter_count();
  }
}

TEST_CASE("ImageNet vgg-16 has the 4096-4096 head with dropout", "[graph][zoo][vgg]") {
  auto m = build_model(vgg_spec(16, {3, 224, 224}, 1000));
  CHECK(m->parameter_count() == 138365992);
  const std::string summary = m->summary();
  CHECK_THAT(summary, Catch::Contains("dropout2"));
  CHECK_THAT(summary, Catch::Contains("[N, 25088]"));
  CHECK(m->forward(test::random_tensor({1, 3, 224, 224}, 2), false).shape() == shape_t{1, 1000});
}

TEST_CASE("vgg refuses inputs its heads are not sized for", "[graph][zoo][vgg]") {
  CHECK_THROWS_WITH(build_model(vgg_spec(16, {1, 28, 28})),
                    Catch::Contains("32x32") && Catch::Contains("224x224"));
}
