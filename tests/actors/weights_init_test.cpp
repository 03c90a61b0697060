// Tests for actors/weights_init.cpp: a checkpoint of another run shape (2 computes, 2 shards,
// one process or a cluster's parts) seeds a model's weights; reset layers take the
// initializer's; every refusal names the file, the tensor and what to do.
#include <troupe/actors/weights_init.hpp>

#include <catch2/catch.hpp>

#include <cstring>

#include <troupe/graph/zoo.hpp>
#include <troupe/io/checkpoint_parts.hpp>
#include <troupe/io/dataset.hpp>

#include "tests/io/checkpoint_split.hpp"
#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

std::unique_ptr<model> mlp(std::uint64_t seed, int classes = 10) {
  model_spec spec;
  spec.network = "mlp";
  spec.sample_shape = {1, 4, 4};
  spec.classes = classes;
  spec.seed = seed;
  return build_model(spec);
}

// What a run of 2 computes and 2 shards of `saved` would write after epoch 3.
training_checkpoint two_compute_checkpoint(model& saved) {
  training_checkpoint c;
  c.epoch = 3;
  c.network = "mlp";
  c.steps_per_epoch = 9;
  for (const auto* p : saved.parameters()) {
    c.parameters.push_back({p->name, p->value.clone()});
    c.state.push_back({{tensor(p->value.shape())}, 0}); // SGD: the velocity
  }
  c.shards.resize(2);
  c.replicas.resize(2);
  return c;
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape()
         && std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * sizeof(float))
              == 0;
}

// Shard s holds the parameters of slot s, s + 2, ...: the parts of 2 servers.
std::vector<std::vector<test::split_key>> two_shards(const training_checkpoint& c) {
  std::vector<std::vector<test::split_key>> shards(2);
  for (std::size_t slot = 0; slot < c.parameters.size(); ++slot)
    shards[slot % 2].push_back({slot, 0, c.parameters[slot].value.numel(), true});
  return shards;
}

} // namespace

TEST_CASE("init_from reads PREFIX-EPOCH of either kind and a file by its name",
          "[actors][weights_init]") {
  test::temp_dir dir;
  auto saved = mlp(7);
  const auto c = two_compute_checkpoint(*saved);
  write_checkpoint(dir.file("one-0003.safetensors"), c);
  test::write_split(dir.file("parts"), c, two_shards(c), 2, 2);
  for (const auto& spec : {dir.file("one-3"), dir.file("one-0003.safetensors"), dir.file("parts-3"),
                           dir.file("parts-0003.manifest.json")}) {
    const auto source = read_init_source(spec);
    CHECK(source.checkpoint.epoch == 3);
    CHECK(source.checkpoint.replicas.size() == 2);
    REQUIRE(source.checkpoint.parameters.size() == c.parameters.size());
    for (std::size_t slot = 0; slot < c.parameters.size(); ++slot)
      CHECK(same_bits(source.checkpoint.parameters[slot].value, c.parameters[slot].value));
  }
  CHECK(read_init_source(dir.file("parts-3")).file == dir.file("parts-0003.manifest.json"));
}

TEST_CASE("a 2-compute checkpoint's weights seed a model whole", "[actors][weights_init]") {
  test::temp_dir dir;
  auto saved = mlp(7);
  test::write_split(dir.file("parts"), two_compute_checkpoint(*saved),
                    two_shards(two_compute_checkpoint(*saved)), 2, 2);
  auto reference = mlp(0);
  const auto weights = weights_from(read_init_source(dir.file("parts-3")), *reference, {});
  REQUIRE(weights.size() == saved->parameters().size());
  for (std::size_t slot = 0; slot < weights.size(); ++slot)
    CHECK(same_bits(weights[slot], saved->parameters()[slot]->value));
}

TEST_CASE("reset layers take the initializer's weights, every other tensor the checkpoint's",
          "[actors][weights_init]") {
  test::temp_dir dir;
  auto saved = mlp(7, 5);
  write_checkpoint(dir.file("a-0003.safetensors"), two_compute_checkpoint(*saved));
  auto reference = mlp(0, 10); // a wider classifier: fc3 must be reset
  const auto fresh_model = mlp(0, 10);
  const auto weights = weights_from(read_init_source(dir.file("a-3")), *reference, {"fc3"});
  CHECK(reset_parameters(*reference, {"fc3"})
        == std::vector<std::string>{"fc3.weight", "fc3.bias"});
  const auto& params = reference->parameters();
  REQUIRE(weights.size() == params.size());
  for (std::size_t slot = 0; slot < params.size(); ++slot) {
    const bool reset = params[slot]->name.rfind("fc3.", 0) == 0;
    CHECK(same_bits(weights[slot], reset ? fresh_model->parameters()[slot]->value
                                         : saved->parameters()[slot]->value));
  }
  // The initializer's fc3 differs from the saved one, so the check above can tell them apart.
  CHECK_FALSE(same_bits(fresh_model->parameters()[0]->value, saved->parameters()[0]->value));
}

TEST_CASE("the start line says where the weights came from", "[actors][weights_init]") {
  auto saved = mlp(7);
  const init_source source{"r/m-0003.safetensors", two_compute_checkpoint(*saved)};
  auto reference = mlp(0);
  CHECK(init_line(source, *reference, {})
        == "Initializing from r/m-0003.safetensors (mlp after epoch 3, 2 compute(s)): 6 of 6 "
           "parameters from it, training from epoch 0");
  CHECK(init_line(source, *reference, {"fc3"})
        == "Initializing from r/m-0003.safetensors (mlp after epoch 3, 2 compute(s)): 4 of 6 "
           "parameters from it, training from epoch 0; from the initializer: fc3.weight, fc3.bias");
}

TEST_CASE("a prefix resets every layer it starts", "[actors][weights_init]") {
  auto reference = mlp(0);
  CHECK(reset_parameters(*reference, {"fc"}).size() == 6);
  CHECK(reset_parameters(*reference, {"fc1", "fc2.w"})
        == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight"});
  CHECK(reset_parameters(*reference, {}).empty());
}

TEST_CASE("a reset name matching no layer is refused, listing the layers",
          "[actors][weights_init]") {
  auto reference = mlp(0);
  CHECK_THROWS_AS(reset_parameters(*reference, {"fc9"}), std::invalid_argument);
  CHECK_THROWS_WITH(reset_parameters(*reference, {"fc3", "classifier"}),
                    Contains("reset_layers: classifier matches no layer of mlp")
                      && Contains("its layers: fc1, fc2, fc3"));
  CHECK_THROWS_WITH(reset_parameters(*reference, {""}), Contains("matches no layer"));
}

TEST_CASE("a shape that differs is refused naming both shapes and --reset-layers",
          "[actors][weights_init]") {
  test::temp_dir dir;
  auto saved = mlp(7, 5);
  write_checkpoint(dir.file("a-0003.safetensors"), two_compute_checkpoint(*saved));
  auto reference = mlp(0, 10);
  CHECK_THROWS_AS(weights_from(read_init_source(dir.file("a-3")), *reference, {}), io_error);
  CHECK_THROWS_WITH(weights_from(read_init_source(dir.file("a-3")), *reference, {}),
                    Contains(dir.file("a-0003.safetensors") + ": holds fc3.weight [5, 64]")
                      && Contains("the model (mlp) has fc3.weight [10, 64]")
                      && Contains("--reset-layers fc3"));
}

TEST_CASE("a tensor missing or one the model lacks is refused", "[actors][weights_init]") {
  test::temp_dir dir;
  auto saved = mlp(7);
  auto c = two_compute_checkpoint(*saved);
  auto fewer = c;
  fewer.parameters.pop_back();
  fewer.state.pop_back();
  write_checkpoint(dir.file("fewer-0003.safetensors"), fewer);
  auto reference = mlp(0);
  CHECK_THROWS_WITH(weights_from(read_init_source(dir.file("fewer-3")), *reference, {}),
                    Contains("fewer-0003.safetensors: holds no tensor fc3.bias")
                      && Contains("--reset-layers fc3"));
  // Reset, the missing tensor is not needed.
  CHECK(weights_from(read_init_source(dir.file("fewer-3")), *reference, {"fc3"}).size() == 6);
  auto more = c;
  more.parameters.push_back({"head.weight", tensor({2, 2})});
  more.state.push_back({{tensor(shape_t{2, 2})}, 0});
  write_checkpoint(dir.file("more-0003.safetensors"), more);
  CHECK_THROWS_WITH(weights_from(read_init_source(dir.file("more-3")), *reference, {}),
                    Contains("holds head.weight [2, 2], which the model (mlp) lacks"));
}

TEST_CASE("init_from refuses a name that is no checkpoint", "[actors][weights_init]") {
  test::temp_dir dir;
  CHECK_THROWS_WITH(read_init_source(dir.file("runs")),
                    Contains("name a checkpoint as PREFIX-EPOCH"));
  CHECK_THROWS_WITH(read_init_source("-3"), Contains("PREFIX-EPOCH"));
  CHECK_THROWS_WITH(read_init_source(dir.file("run-x")), Contains("PREFIX-EPOCH"));
  CHECK_THROWS_AS(read_init_source(dir.file("none-3")), io_error);
  test::write_file(dir.file("junk.safetensors"), {1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK_THROWS_AS(read_init_source(dir.file("junk.safetensors")), io_error);
  CHECK_THROWS_WITH(read_init_source(dir.file("junk.safetensors")),
                    Contains(dir.file("junk.safetensors")));
}
