// ResNets: CIFAR depth 6n+2 with option-A shortcuts (ResNet-20: 269,722 parameters,
// ResNet-110: 1,727,962, the paper's 0.27M / 1.7M) and the ImageNet designs with projection
// shortcuts (ResNet-18: 11,689,512, ResNet-50: 25,557,032, and 34 / 101 / 152), their output
// shapes, and depth errors for each input size.
#include <catch2/catch.hpp>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/zoo.hpp>

using namespace troupe;

namespace {

model_spec resnet_spec(int depth, shape_t sample, int classes = 10) {
  model_spec spec;
  spec.network = "resnet";
  spec.num_layers = depth;
  spec.sample_shape = std::move(sample);
  spec.classes = classes;
  return spec;
}

bool has_parameter(model& m, const std::string& name) {
  for (auto* p : m.parameters())
    if (p->name == name)
      return true;
  return false;
}

} // namespace

TEST_CASE("CIFAR resnets have the option-A parameter counts", "[graph][zoo][resnet]") {
  auto r20 = build_model(resnet_spec(0, {3, 32, 32}));
  CHECK(r20->name() == "resnet-20");
  CHECK(r20->parameter_count() == 269722);
  CHECK_FALSE(has_parameter(*r20, "stage2.block1.conv_proj.weight"));
  CHECK_THAT(r20->summary(), Catch::Contains("stage2.block1.shortcut"));
  CHECK(build_model(resnet_spec(110, {3, 32, 32}))->parameter_count() == 1727962);
  CHECK(build_model(resnet_spec(56, {3, 32, 32}))->parameter_count() > 850000);
}

TEST_CASE("CIFAR resnet maps 32x32 and 28x28 batches to N x classes logits",
          "[graph][zoo][resnet]") {
  auto r20 = build_model(resnet_spec(20, {3, 32, 32}));
  CHECK(r20->forward(test::random_tensor({2, 3, 32, 32}, 1), false).shape() == shape_t{2, 10});
  auto mnist = build_model(resnet_spec(20, {1, 28, 28}));
  tensor x = test::random_tensor({2, 1, 28, 28}, 2);
  CHECK(mnist->forward(x, false).shape() == shape_t{2, 10});
  CHECK(mnist->train_step(x, {1, 2}).count == 2);
}

TEST_CASE("ImageNet resnets have the published parameter counts", "[graph][zoo][resnet]") {
  const std::vector<std::pair<int, std::int64_t>> published{
    {18, 11689512}, {34, 21797672}, {50, 25557032}, {101, 44549160}, {152, 60192808}};
  for (auto [depth, count] : published) {
    INFO("resnet-" << depth);
    auto m = build_model(resnet_spec(depth, {3, 224, 224}, 1000));
    CHECK(m->parameter_count() == count);
  }
  auto r50 = build_model(resnet_spec(0, {3, 224, 224}, 1000));
  CHECK(r50->name() == "resnet-50");
  CHECK(has_parameter(*r50, "stage1.block1.conv_proj.weight"));
  CHECK_THAT(r50->summary(), Catch::Contains("[N, 2048, 7, 7]"));
}

TEST_CASE("ImageNet resnets map a 224x224 image to 1000 logits", "[graph][zoo][resnet]") {
  for (int depth : {18, 50}) {
    INFO("resnet-" << depth);
    auto m = build_model(resnet_spec(depth, {3, 224, 224}, 1000));
    CHECK(m->forward(test::random_tensor({1, 3, 224, 224}, 3), false).shape() == shape_t{1, 1000});
  }
}

TEST_CASE("resnet rejects depths its design does not have", "[graph][zoo][resnet]") {
  CHECK_THROWS_WITH(build_model(resnet_spec(21, {3, 32, 32})),
                    Catch::Contains("6n+2") && Catch::Contains("21"));
  CHECK_THROWS_WITH(build_model(resnet_spec(18, {3, 32, 32})), Catch::Contains("6n+2"));
  CHECK_THROWS_WITH(build_model(resnet_spec(20, {3, 224, 224})),
                    Catch::Contains("18, 34, 50, 101, 152"));
}
