// Tests for io/checkpoint_file.cpp: a checkpoint survives the round trip bit for bit, its
// file is plain safetensors with the documented names, and a file that is missing, truncated,
// corrupted anywhere, or not a checkpoint is refused naming the file.
#include <troupe/io/checkpoint_file.hpp>

#include <cstring>

#include <catch2/catch.hpp>

#include <troupe/io/dataset.hpp>

#include "tests/io/checkpoint_sample.hpp"
#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

training_checkpoint sample() {
  return test::sample_checkpoint();
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

} // namespace

TEST_CASE("checkpoint_path numbers epochs as MXNet does", "[io][checkpoint]") {
  CHECK(checkpoint_path("runs/mlp", 3) == "runs/mlp-0003.safetensors");
  CHECK(checkpoint_path("m", 12345) == "m-12345.safetensors");
  CHECK_THROWS(checkpoint_path("", 1));
  CHECK_THROWS(checkpoint_path("m", -1));
}

TEST_CASE("a checkpoint reads back bit for bit", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto path = dir.file("m-0002.safetensors");
  const auto c = sample();
  write_checkpoint(path, c);
  const auto back = read_checkpoint(path);
  CHECK(back.epoch == 2);
  CHECK(back.network == "lenet");
  CHECK(back.steps_per_epoch == 17);
  REQUIRE(back.parameters.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(back.parameters[i].name == c.parameters[i].name);
    CHECK(same_bits(back.parameters[i].value, c.parameters[i].value));
    CHECK(same_bits(back.state[i].tensors.at(0), c.state[i].tensors.at(0)));
  }
  REQUIRE(back.shards.size() == 2);
  CHECK(back.shards[0].updates == 34);
  CHECK(back.shards[0].last_learning_rate == 0.1f);
  CHECK(back.shards[0].last_steps == c.shards[0].last_steps);
  CHECK(back.shards[1].last_steps.empty());
  REQUIRE(back.replicas.size() == 2);
  CHECK(same_bits(back.replicas[1].buffers[0].value, c.replicas[1].buffers[0].value));
  CHECK(back.replicas[1].streams == c.replicas[1].streams);
}

TEST_CASE("the checkpoint file is plain safetensors with the documented names",
          "[io][checkpoint]") {
  test::temp_dir dir;
  const auto path = dir.file("m-0002.safetensors");
  write_checkpoint(path, sample());
  const auto content = decode_safetensors(path, test::read_whole_file(path));
  std::vector<std::string> names;
  for (const auto& t : content.tensors)
    names.push_back(t.name);
  CHECK(names
        == std::vector<std::string>{"fc.weight", "fc.bias", "bn.running_mean", "momentum/fc.weight",
                                    "momentum/fc.bias", "worker1/bn.running_mean"});
  CHECK(content.metadata.at("troupe.epoch") == "2");
  CHECK(content.metadata.at("troupe.crc32").size() == 8);
}

namespace {

// The sample with Adam's state: two moments per parameter and each parameter's update count.
training_checkpoint adam_sample() {
  auto c = sample();
  c.optimizer = optimizer_kind::adam;
  c.state = {{{tensor::from_values({2, 2}, {0.1f, 0.2f, 0.3f, 0.4f}),
               tensor::from_values({2, 2}, {1, 2, 3, 4})},
              34},
             {{tensor::from_values({2}, {9, 8}), tensor::from_values({2}, {7, 6})}, 33}};
  return c;
}

} // namespace

TEST_CASE("an SGD checkpoint names no optimizer, an Adam one its state and counts",
          "[io][checkpoint]") {
  test::temp_dir dir;
  const auto sgd_path = dir.file("s-0002.safetensors");
  write_checkpoint(sgd_path, sample());
  const auto sgd = decode_safetensors(sgd_path, test::read_whole_file(sgd_path));
  CHECK(sgd.metadata.count("troupe.optimizer") == 0);
  CHECK(read_checkpoint(sgd_path).optimizer == optimizer_kind::sgd);

  const auto path = dir.file("a-0002.safetensors");
  const auto c = adam_sample();
  write_checkpoint(path, c);
  const auto content = decode_safetensors(path, test::read_whole_file(path));
  CHECK(content.metadata.at("troupe.optimizer") == "adam");
  std::vector<std::string> names;
  for (const auto& t : content.tensors)
    names.push_back(t.name);
  CHECK(names
        == std::vector<std::string>{"fc.weight", "fc.bias", "bn.running_mean", "exp_avg/fc.weight",
                                    "exp_avg_sq/fc.weight", "exp_avg/fc.bias", "exp_avg_sq/fc.bias",
                                    "worker1/bn.running_mean"});
  const auto back = read_checkpoint(path);
  CHECK(back.optimizer == optimizer_kind::adam);
  REQUIRE(back.state.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(back.state[i].steps == c.state[i].steps);
    REQUIRE(back.state[i].tensors.size() == 2);
    for (std::size_t k = 0; k < 2; ++k)
      CHECK(same_bits(back.state[i].tensors[k], c.state[i].tensors[k]));
  }
}

TEST_CASE("an optimizer's state that does not fit its parameters is not written",
          "[io][checkpoint]") {
  test::temp_dir dir;
  auto c = adam_sample();
  c.state[0].tensors.pop_back();
  CHECK_THROWS_WITH(write_checkpoint(dir.file("x"), c),
                    Contains("fc.weight has 1 state tensors, adam keeps 2"));
  c = adam_sample();
  c.state[1].tensors[1] = tensor({3});
  CHECK_THROWS_WITH(write_checkpoint(dir.file("x"), c), Contains("exp_avg_sq of fc.bias"));
}

TEST_CASE("a missing, truncated or corrupted checkpoint is refused naming the file",
          "[io][checkpoint]") {
  test::temp_dir dir;
  const auto path = dir.file("m-0002.safetensors");
  CHECK_THROWS_AS(read_checkpoint(path), io_error);
  CHECK_THROWS_WITH(read_checkpoint(path), Contains(path));
  write_checkpoint(path, sample());
  const auto good = test::read_whole_file(path);
  const auto bad = dir.file("bad.safetensors");
  // Every single flipped byte is caught, in the length, the header and the data.
  for (std::size_t at = 0; at < good.size(); at += 7) {
    auto flipped = good;
    flipped[at] ^= 0x01;
    test::write_file(bad, flipped);
    CHECK_THROWS_WITH(read_checkpoint(bad), Contains(bad + ": "));
  }
  auto flipped = good;
  flipped[good.size() - 3] ^= 0x40;
  test::write_file(bad, flipped);
  CHECK_THROWS_WITH(read_checkpoint(bad), Contains("checksum mismatch") && Contains("corrupted"));
  for (std::size_t keep : {std::size_t{0}, std::size_t{7}, std::size_t{100}, good.size() - 1}) {
    test::write_file(bad, test::bytes(good.begin(), good.begin() + static_cast<long>(keep)));
    CHECK_THROWS_WITH(read_checkpoint(bad), Contains(bad + ": "));
  }
}

TEST_CASE("a safetensors file that is not a Troupe checkpoint is refused", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto path = dir.file("plain.safetensors");
  safetensors_content c;
  c.tensors.push_back({"w", tensor({2})});
  test::write_file(path, encode_safetensors(c));
  CHECK_THROWS_WITH(read_checkpoint(path), Contains(path + ": no troupe.crc32"));
}

TEST_CASE("an inconsistent checkpoint is not written", "[io][checkpoint]") {
  test::temp_dir dir;
  auto c = sample();
  c.state[1].tensors[0] = tensor({3});
  CHECK_THROWS_WITH(write_checkpoint(dir.file("x"), c), Contains("momentum of fc.bias"));
  c = sample();
  c.replicas[1].buffers[0].value = tensor({5});
  CHECK_THROWS_WITH(write_checkpoint(dir.file("x"), c), Contains("different buffers"));
}
