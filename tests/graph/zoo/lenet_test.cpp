// LeNet: exactly 3,274,634 parameters for 1x28x28 and 10 classes, readable layer names, and an
// output of [N, 10].
#include <catch2/catch.hpp>

#include "tests/graph/graph_test_util.hpp"
#include <troupe/graph/zoo.hpp>

using namespace troupe;

TEST_CASE("lenet has 3,274,634 parameters and named layers", "[graph][zoo][lenet]") {
  model_spec spec;
  spec.network = "lenet";
  auto m = build_model(spec);
  CHECK(m->parameter_count() == 3274634);
  std::vector<std::string> names;
  for (auto* p : m->parameters())
    names.push_back(p->name);
  CHECK(names
        == std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                    "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(m->parameters()[m->parameter_index("fc1.weight")]->value.shape()
        == shape_t{1024, 64 * 7 * 7});
  const std::string summary = m->summary();
  for (const char* layer : {"conv1", "pool1", "conv2", "pool2", "fc1", "fc2"})
    CHECK_THAT(summary, Catch::Contains(layer));
  CHECK_THAT(summary, Catch::Contains("[N, 64, 7, 7]"));
}

TEST_CASE("lenet maps a batch to N x classes logits", "[graph][zoo][lenet]") {
  model_spec spec;
  spec.network = "lenet";
  auto m = build_model(spec);
  tensor x = test::random_tensor({2, 1, 28, 28}, 1);
  CHECK(m->forward(x, false).shape() == shape_t{2, 10});
  loss_result r = m->train_step(x, {3, 7});
  CHECK(r.count == 2);
  CHECK(m->parameters()[0]->grad.shape() == shape_t{32, 1, 5, 5});
}
