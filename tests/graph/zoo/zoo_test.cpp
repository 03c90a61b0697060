// build_model dispatch: unknown names and bad depths give messages that list the choices,
// every network builds with its default depth and has unique parameter names, and the seed
// alone decides the weights.
#include <catch2/catch.hpp>

#include <set>

#include <troupe/graph/zoo.hpp>

using namespace troupe;

namespace {

model_spec small_spec(const std::string& network) {
  model_spec spec;
  spec.network = network;
  spec.sample_shape = network == "mlp" || network == "lenet" ? shape_t{1, 28, 28}
                      : network == "inception-bn"            ? shape_t{3, 28, 28}
                                                             : shape_t{3, 32, 32};
  return spec;
}

} // namespace

TEST_CASE("zoo_networks lists the five families", "[graph][zoo]") {
  CHECK(zoo_networks()
        == std::vector<std::string>{"mlp", "lenet", "resnet", "inception-bn", "vgg"});
}

TEST_CASE("build_model rejects an unknown network listing the valid ones", "[graph][zoo]") {
  model_spec spec;
  spec.network = "alexnet";
  try {
    build_model(spec);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("'alexnet'"));
    for (const auto& name : zoo_networks())
      CHECK_THAT(what, Catch::Contains(name));
  }
}

TEST_CASE("build_model rejects bad depths listing the supported ones", "[graph][zoo]") {
  model_spec spec = small_spec("mlp");
  spec.num_layers = 5;
  CHECK_THROWS_WITH(build_model(spec), Catch::Contains("mlp") && Catch::Contains("supported: 3"));
  spec = small_spec("lenet");
  spec.num_layers = 5;
  CHECK_THROWS_WITH(build_model(spec), Catch::Contains("supported: 4"));
  spec = small_spec("inception-bn");
  spec.num_layers = 22;
  CHECK_THROWS_WITH(build_model(spec), Catch::Contains("0 (the default)"));
  spec = small_spec("vgg");
  spec.num_layers = 17;
  CHECK_THROWS_WITH(build_model(spec), Catch::Contains("11, 13, 16, 19"));
  spec = small_spec("lenet");
  spec.sample_shape = {784};
  CHECK_THROWS_WITH(build_model(spec), Catch::Contains("C x H x W"));
}

TEST_CASE("every zoo network builds with unique parameter names", "[graph][zoo]") {
  for (const auto& network : zoo_networks()) {
    INFO(network);
    auto m = build_model(small_spec(network));
    std::set<std::string> names;
    for (auto* p : m->parameters())
      names.insert(p->name);
    CHECK(names.size() == m->parameters().size());
    for (std::size_t slot = 0; slot < m->parameters().size(); ++slot)
      CHECK(m->parameter_index(m->parameters()[slot]->name) == slot);
    CHECK(m->classes() == 10);
  }
}

TEST_CASE("build_model weights depend on the seed only", "[graph][zoo]") {
  model_spec spec = small_spec("lenet");
  spec.seed = 5;
  auto a = build_model(spec), b = build_model(spec);
  spec.seed = 6;
  auto c = build_model(spec);
  const tensor& wa = a->parameters()[0]->value;
  const tensor& wb = b->parameters()[0]->value;
  const tensor& wc = c->parameters()[0]->value;
  bool same = true, differs = false;
  for (std::int64_t i = 0; i < wa.numel(); ++i) {
    same = same && wa.data()[i] == wb.data()[i];
    differs = differs || wa.data()[i] != wc.data()[i];
  }
  CHECK(same);
  CHECK(differs);
}
