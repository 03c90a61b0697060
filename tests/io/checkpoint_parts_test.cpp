// Tests for io/checkpoint_parts.hpp: a checkpoint cut into a cluster run's parts (sliced keys
// over two servers, replicas over two worker nodes) reads back as the checkpoint it came from,
// and every way a part or the manifest can be missing, damaged or mismatched is refused with
// the file at fault named, before anything could train on it.
#include <troupe/io/checkpoint_parts.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include <catch2/catch.hpp>

#include <troupe/io/dataset.hpp>

#include "io/checkpoint_codec.hpp"
#include "io/checkpoint_part_file.hpp"
#include "tests/io/checkpoint_sample.hpp"
#include "tests/io/checkpoint_split.hpp"
#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

training_checkpoint sample() {
  return test::sample_checkpoint(3);
}

using test::split_key;
// fc.weight cut in two slices over both shards, fc.bias whole on shard 0.
const std::vector<std::vector<split_key>> sliced = {{{0, 0, 3, false}, {1, 0, 2, true}},
                                                    {{0, 3, 1, false}}};

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

void flip_byte(const std::string& path, std::size_t at) {
  auto bytes = test::read_whole_file(path);
  bytes.at(at) ^= 0x10;
  test::write_file(path, bytes);
}

std::string text_of(const std::string& path) {
  const auto b = test::read_whole_file(path);
  return std::string(b.begin(), b.end());
}

void write_text(const std::string& path, const std::string& text) {
  test::write_file(path, test::bytes(text.begin(), text.end()));
}

} // namespace

TEST_CASE("cluster checkpoint files are named beside the one-process file", "[io][checkpoint]") {
  CHECK(checkpoint_manifest_path("runs/m", 3) == "runs/m-0003.manifest.json");
  CHECK(checkpoint_part_path("runs/m", 3, "server_0") == "runs/m-0003.server_0.safetensors");
  CHECK_THROWS_AS(checkpoint_part_path("m", 1, ""), std::invalid_argument);
  CHECK_THROWS_AS(checkpoint_part_path("m", 1, "../x"), std::invalid_argument);
  CHECK_THROWS_AS(checkpoint_manifest_path("", 1), std::invalid_argument);
  CHECK_THROWS_AS(checkpoint_manifest_path("m", -1), std::invalid_argument);
}

TEST_CASE("parts and a manifest read back as the checkpoint they came from", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  const auto c = sample();
  const auto records = test::write_split(prefix, c, sliced, 2, 2);
  REQUIRE(records.size() == 4);
  CHECK(records[0].file == "m-0003.server_0.safetensors");
  CHECK(records[0].bytes == std::filesystem::file_size(dir.file(records[0].file)));
  CHECK(records[0].checksum.rfind("sha256:", 0) == 0);
  CHECK(existing_checkpoint_path(prefix, 3) == checkpoint_manifest_path(prefix, 3));
  const auto back = read_any_checkpoint(prefix, 3);
  CHECK(back.epoch == 3);
  CHECK(back.network == "lenet");
  CHECK(back.steps_per_epoch == 17);
  REQUIRE(back.parameters.size() == c.parameters.size());
  REQUIRE(back.state.size() == c.state.size());
  REQUIRE(back.shards.size() == c.shards.size());
  REQUIRE(back.replicas.size() == c.replicas.size());
  for (std::size_t i = 0; i < c.parameters.size(); ++i) {
    CHECK(back.parameters[i].name == c.parameters[i].name);
    CHECK(same_bits(back.parameters[i].value, c.parameters[i].value));
    CHECK(same_bits(back.state[i].tensors.at(0), c.state[i].tensors.at(0)));
  }
  for (std::size_t s = 0; s < c.shards.size(); ++s) {
    CHECK(back.shards[s].updates == c.shards[s].updates);
    CHECK(back.shards[s].last_learning_rate == c.shards[s].last_learning_rate);
    CHECK(back.shards[s].last_steps == c.shards[s].last_steps);
  }
  for (std::size_t w = 0; w < c.replicas.size(); ++w) {
    REQUIRE(back.replicas[w].buffers.size() == c.replicas[w].buffers.size());
    CHECK(back.replicas[w].buffers[0].name == c.replicas[w].buffers[0].name);
    CHECK(same_bits(back.replicas[w].buffers[0].value, c.replicas[w].buffers[0].value));
    CHECK(back.replicas[w].streams == c.replicas[w].streams);
  }
}

namespace {

// sample() as Adam would have left it: two state tensors per parameter and 34 updates each.
training_checkpoint adam_sample() {
  auto c = sample();
  c.optimizer = optimizer_kind::adam;
  c.state = {{{tensor::from_values({2, 2}, {0.1f, 0.2f, 0.3f, 0.4f}),
               tensor::from_values({2, 2}, {1e-3f, 2e-3f, 3e-3f, 4e-3f})},
              34},
             {{tensor::from_values({2}, {9, 8}), tensor::from_values({2}, {0.25f, 0.5f})}, 34}};
  return c;
}

} // namespace

TEST_CASE("parts keep every optimizer's state and update counts", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  const auto c = adam_sample();
  test::write_split(prefix, c, sliced, 2, 2);
  const auto back = read_any_checkpoint(prefix, 3);
  CHECK(back.optimizer == optimizer_kind::adam);
  REQUIRE(back.state.size() == 2);
  for (std::size_t slot = 0; slot < 2; ++slot) {
    REQUIRE(back.state[slot].tensors.size() == 2);
    CHECK(same_bits(back.state[slot].tensors[0], c.state[slot].tensors[0]));
    CHECK(same_bits(back.state[slot].tensors[1], c.state[slot].tensors[1]));
    CHECK(back.state[slot].steps == 34);
  }
  const auto server = text_of(checkpoint_part_path(prefix, 3, "server_0"));
  CHECK_THAT(server,
             Contains("exp_avg_sq/0@0") && Contains("\"troupe.shard.0.optimizer\":\"adam\""));
  // SGD's parts are written as they always were: no optimizer, no counts.
  test::write_split(dir.file("sgd"), sample(), sliced, 2, 2);
  const auto sgd = text_of(checkpoint_part_path(dir.file("sgd"), 3, "server_0"));
  CHECK_THAT(sgd, !Contains("troupe.shard.0.optimizer") && !Contains("troupe.shard.0.steps"));
}

TEST_CASE("parts that disagree on the optimizer or a parameter's updates are refused",
          "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  const auto c = adam_sample();
  auto parts = test::split_checkpoint(c, sliced, 2, 2);
  std::string fault;
  SECTION("another optimizer in one shard") {
    auto& shard = parts[1].second.shards[0];
    shard.optimizer = optimizer_kind::rmsprop; // square_avg, momentum_buffer: two tensors too
    fault = "holds rmsprop's state in shard 1, " + checkpoint_part_path(prefix, 3, "server_0")
            + " holds adam's";
  }
  SECTION("a key of fc.weight with another count") {
    parts[1].second.shards[0].keys[0].state.steps = 33;
    fault = "key 0@3 (fc.weight) has had 33 updates, another key of it 34";
  }
  std::vector<part_record> records;
  for (const auto& [node, part] : parts)
    records.push_back(write_checkpoint_part(checkpoint_part_path(prefix, 3, node), 3, part));
  write_checkpoint_manifest(prefix, test::header_of(c, 2), records);
  CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                    Contains(checkpoint_part_path(prefix, 3, "server_1") + ": ")
                      && Contains(fault));
}

TEST_CASE("a node may hold shards and replicas in one part", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto c = sample();
  const auto records = test::write_split(dir.file("m"), c, sliced, 1, 0);
  REQUIRE(records.size() == 1);
  const auto back = read_any_checkpoint(dir.file("m"), 3);
  REQUIRE(back.parameters.size() == 2);
  REQUIRE(back.replicas.size() == 2);
  CHECK(same_bits(back.parameters[0].value, c.parameters[0].value));
  CHECK(same_bits(back.replicas[1].buffers[0].value, c.replicas[1].buffers[0].value));
}

TEST_CASE("an epoch has one kind of checkpoint", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  const auto single = checkpoint_path(prefix, 3);
  const auto manifest = checkpoint_manifest_path(prefix, 3);
  write_checkpoint(single, sample());
  test::write_split(prefix, sample(), sliced, 2, 2);
  CHECK_FALSE(std::filesystem::exists(single)); // the manifest displaced it
  write_checkpoint(single, sample());
  CHECK_FALSE(std::filesystem::exists(manifest)); // and the other way round
  CHECK(existing_checkpoint_path(prefix, 3) == single);
  CHECK(read_any_checkpoint(prefix, 3).parameters.size() == 2);
  test::write_split(dir.file("other"), sample(), sliced, 2, 2);
  std::filesystem::copy_file(checkpoint_manifest_path(dir.file("other"), 3), manifest);
  CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                    Contains(single) && Contains(manifest) && Contains("two checkpoints"));
  CHECK_THROWS_WITH(read_any_checkpoint(prefix, 4),
                    Contains(checkpoint_path(prefix, 4)) && Contains("cannot open"));
}

TEST_CASE("a missing, truncated or corrupted part is refused naming it", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  test::write_split(prefix, sample(), sliced, 2, 2);
  const auto part = checkpoint_part_path(prefix, 3, "server_1");
  const auto good = test::read_whole_file(part);
  SECTION("missing") {
    std::filesystem::remove(part);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(part + ": cannot open") && Contains("m-0003.manifest.json"));
  }
  SECTION("truncated") {
    test::write_file(part, test::bytes(good.begin(), good.end() - 100));
    CHECK_THROWS_WITH(
      read_any_checkpoint(prefix, 3),
      Contains(part + ": has " + std::to_string(good.size() - 100) + " bytes where the manifest"));
  }
  SECTION("a flipped byte anywhere") {
    for (std::size_t at = 0; at < good.size(); at += 13) {
      test::write_file(part, good);
      flip_byte(part, at);
      CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                        Contains(part + ": checksum sha256:") && Contains("differs"));
    }
  }
  SECTION("corrupted, with a manifest that records the corrupt bytes: the part's own CRC") {
    flip_byte(part, good.size() - 5);
    auto records = test::write_split(dir.file("fresh"), sample(), sliced, 2, 2);
    const auto bytes = test::read_whole_file(part);
    records[1] = {"m-0003.server_1.safetensors", bytes.size(), sha256_text(bytes)};
    write_checkpoint_manifest(prefix, test::header_of(sample(), 2), records);
    records[0].file = "m-0003.server_0.safetensors";
    records[2].file = "m-0003.worker_0.safetensors";
    records[3].file = "m-0003.worker_1.safetensors";
    write_checkpoint_manifest(prefix, test::header_of(sample(), 2), records);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(part + ": checksum mismatch") && Contains("corrupted"));
  }
}

TEST_CASE("a manifest whose record differs from its part is refused naming the part",
          "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  auto records = test::write_split(prefix, sample(), sliced, 2, 2);
  const auto part = dir.file(records[2].file);
  const auto header = test::header_of(sample(), 2);
  SECTION("another checksum") {
    records[2].checksum = "sha256:" + std::string(64, 'a');
    write_checkpoint_manifest(prefix, header, records);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(part + ": checksum")
                        && Contains("differs from the manifest's sha256:aaaa"));
  }
  SECTION("another size") {
    records[2].bytes += 8;
    write_checkpoint_manifest(prefix, header, records);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(part + ": has ") && Contains("bytes where the manifest"));
  }
  SECTION("a part of another epoch") {
    auto parts = test::split_checkpoint(sample(), sliced, 2, 2);
    records[2] = write_checkpoint_part(part, 2, parts[2].second);
    write_checkpoint_manifest(prefix, header, records);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(part + ": is a part of epoch 2") && Contains("epoch 3"));
  }
  SECTION("a manifest renamed to another epoch") {
    std::filesystem::rename(checkpoint_manifest_path(prefix, 3),
                            checkpoint_manifest_path(prefix, 5));
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 5),
                      Contains(checkpoint_manifest_path(prefix, 5)) && Contains("not 5"));
  }
}

TEST_CASE("keys that overlap or leave elements uncovered are refused", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  SECTION("overlap") {
    test::write_split(prefix, sample(), {{{0, 0, 3, false}, {1, 0, 2, true}}, {{0, 2, 2, false}}},
                      2, 2);
    CHECK_THROWS_WITH(
      read_any_checkpoint(prefix, 3),
      Contains(checkpoint_part_path(prefix, 3, "server_1") + ": key 0@2 (fc.weight) overlaps")
        && Contains("server_0"));
  }
  SECTION("the same key twice") {
    test::write_split(prefix, sample(), {{{0, 0, 4, true}, {1, 0, 2, true}}, {{1, 0, 2, true}}}, 2,
                      2);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3), Contains("key 1@0 (fc.bias) overlaps"));
  }
  SECTION("a gap") {
    test::write_split(prefix, sample(), {{{0, 0, 2, false}, {1, 0, 2, true}}, {{0, 3, 1, false}}},
                      2, 2);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(checkpoint_manifest_path(prefix, 3)
                               + ": elements [2, 3) of fc.weight are in no part"));
  }
  SECTION("a parameter no key covers") {
    test::write_split(prefix, sample(), {{{0, 0, 3, false}}, {{0, 3, 1, false}}}, 2, 2);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains("elements [0, 2) of fc.bias are in no part"));
  }
}

TEST_CASE("a key outside its parameter, or of an odd shape, is refused naming its part",
          "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  const auto c = sample();
  auto parts = test::split_checkpoint(c, sliced, 2, 2);
  auto& key = parts[1].second.shards[0].keys[0]; // fc.weight@3, one element
  std::string fault;
  SECTION("past the end") {
    key.weights = key.state.tensors.at(0) = tensor({2});
    fault = "runs past the parameter's 4";
  }
  SECTION("another slot") {
    key.slot = 7;
    fault = "key 7@3 is of parameter slot 7, the manifest names 2";
  }
  SECTION("neither flat nor the parameter's shape") {
    key.weights = key.state.tensors.at(0) = tensor({1, 1});
    fault = "has shape [1, 1]: neither flat nor the parameter's [2, 2]";
  }
  std::vector<part_record> records;
  for (const auto& [node, part] : parts)
    records.push_back(write_checkpoint_part(checkpoint_part_path(prefix, 3, node), 3, part));
  write_checkpoint_manifest(prefix, test::header_of(c, 2), records);
  CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                    Contains(checkpoint_part_path(prefix, 3, "server_1") + ": key ")
                      && Contains(fault));
}

TEST_CASE("a worker or shard missing or given twice is refused", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  const auto c = sample();
  auto parts = test::split_checkpoint(c, sliced, 2, 2);
  std::vector<part_record> records;
  auto write = [&](std::size_t i, const std::string& node) {
    records.push_back(
      write_checkpoint_part(checkpoint_part_path(prefix, 3, node), 3, parts[i].second));
  };
  const auto header = test::header_of(c, 2);
  SECTION("a worker twice") {
    write(0, "server_0"), write(1, "server_1"), write(2, "worker_0"), write(2, "worker_0b");
    write_checkpoint_manifest(prefix, header, records);
    CHECK_THROWS_WITH(
      read_any_checkpoint(prefix, 3),
      Contains(checkpoint_part_path(prefix, 3, "worker_0b") + ": holds worker 0, which")
        && Contains("worker_0.safetensors holds too"));
  }
  SECTION("a worker missing") {
    write(0, "server_0"), write(1, "server_1"), write(2, "worker_0");
    write_checkpoint_manifest(prefix, header, records);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3), Contains(checkpoint_manifest_path(prefix, 3)
                                                               + ": no part holds worker 1 of 2"));
  }
  SECTION("a shard twice") {
    write(0, "server_0"), write(0, "server_0b"), write(1, "server_1"), write(2, "worker_0"),
      write(3, "worker_1");
    write_checkpoint_manifest(prefix, header, records);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3), Contains("holds shard 0, which"));
  }
  SECTION("a shard missing") {
    write(0, "server_0"), write(2, "worker_0"), write(3, "worker_1");
    write_checkpoint_manifest(prefix, header, records);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3), Contains("no part holds shard 1 of 2"));
  }
  SECTION("a worker the run does not have") {
    write(0, "server_0"), write(1, "server_1"), write(2, "worker_0"), write(3, "worker_1");
    auto small = header;
    small.workers = 1;
    write_checkpoint_manifest(prefix, small, records);
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains("worker_1.safetensors: holds worker 1, the manifest's run has 1"));
  }
}

TEST_CASE("a malformed manifest or one of another version is refused naming it",
          "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  test::write_split(prefix, sample(), sliced, 2, 2);
  const auto manifest = checkpoint_manifest_path(prefix, 3);
  const auto good = text_of(manifest);
  auto replaced = [&](const std::string& from, const std::string& to) {
    auto text = good;
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    write_text(manifest, text.replace(at, from.size(), to));
  };
  SECTION("not JSON") {
    write_text(manifest, good.substr(0, good.size() / 2));
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(manifest + ": not a valid manifest (malformed JSON at byte"));
  }
  SECTION("another version") {
    replaced("\"version\": 1", "\"version\": 2");
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(manifest + ": the manifest has format version 2"));
  }
  SECTION("a duplicate key") {
    replaced("\"epoch\": 3,", "\"epoch\": 3, \"epoch\": 3,");
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(manifest) && Contains("duplicate key"));
  }
  SECTION("an unknown member") {
    replaced("\"epoch\": 3,", "\"epoch\": 3, \"epochs\": 3,");
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3), Contains("unknown member \"epochs\""));
  }
  SECTION("a member missing") {
    replaced("\"steps_per_epoch\": 17,", "");
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3), Contains("lacks \"steps_per_epoch\""));
  }
  SECTION("a part outside the manifest's directory") {
    replaced("\"m-0003.server_0.safetensors\"", "\"../m-0003.server_0.safetensors\"");
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3), Contains("not a plain file name"));
  }
  SECTION("no manifest of a one-process file") {
    write_text(manifest, "{}");
    CHECK_THROWS_WITH(read_any_checkpoint(prefix, 3),
                      Contains(manifest + ": the manifest lacks \"format\""));
  }
}

TEST_CASE("a part read alone: another format version, or not a part, is refused",
          "[io][checkpoint]") {
  test::temp_dir dir;
  safetensors_content newer;
  newer.metadata = {{"troupe.kind", "part"},
                    {"troupe.format", "2"},
                    {checkpoint_crc_key, checkpoint_crc_placeholder}};
  CHECK_THROWS_WITH(decode_checkpoint_part("p", encode_checksummed("p", newer)),
                    Contains("p: part format 2 is not one this Troupe reads (1)"));
  const auto single = checkpoint_path(dir.file("m"), 3);
  write_checkpoint(single, sample());
  CHECK_THROWS_WITH(decode_checkpoint_part(single, test::read_whole_file(single)),
                    Contains(single + ": not a part of a cluster checkpoint"));
  auto parts = test::split_checkpoint(sample(), sliced, 2, 2);
  const auto path = dir.file("p.safetensors");
  write_checkpoint_part(path, 3, parts[0].second);
  const auto back = decode_checkpoint_part(path, test::read_whole_file(path));
  CHECK(back.epoch == 3);
  REQUIRE(back.part.shards.size() == 1);
  REQUIRE(back.part.shards[0].keys.size() == 2);
  CHECK(back.part.shards[0].keys[1].slot == 1);
  CHECK(back.part.shards[0].keys[1].weights.shape() == shape_t{2});
  CHECK(back.part.shards[0].counters.updates == 34);
}

TEST_CASE("a part read alone: a malformed optimizer or count list is refused naming it",
          "[io][checkpoint]") {
  auto parts = test::split_checkpoint(adam_sample(), sliced, 2, 2);
  auto content = decode_checksummed("p", encode_checkpoint_part("p", 3, parts[0].second));
  REQUIRE(content.metadata.at("troupe.shard.0.steps") == "34,34");
  auto mended = [&](const std::string& key, const std::string& value) {
    auto changed = content;
    changed.metadata[key] = value;
    changed.metadata[checkpoint_crc_key] = checkpoint_crc_placeholder;
    return encode_checksummed("p", changed);
  };
  CHECK_THROWS_WITH(decode_checkpoint_part("p", mended("troupe.shard.0.optimizer", "nadam")),
                    Contains("p: metadata troupe.shard.0.optimizer names 'nadam'"));
  CHECK_THROWS_WITH(decode_checkpoint_part("p", mended("troupe.shard.0.optimizer", "sgd")),
                    Contains("names 'sgd', not an optimizer whose state a part holds"));
  CHECK_THROWS_WITH(decode_checkpoint_part("p", mended("troupe.shard.0.steps", "34")),
                    Contains("troupe.shard.0.steps holds 1 counts for 2 keys"));
  CHECK_THROWS_WITH(decode_checkpoint_part("p", mended("troupe.shard.0.steps", "34,x")),
                    Contains("troupe.shard.0.steps"));
  auto no_steps = content;
  no_steps.metadata.erase("troupe.shard.0.steps");
  no_steps.metadata[checkpoint_crc_key] = checkpoint_crc_placeholder;
  CHECK_THROWS_WITH(decode_checkpoint_part("p", encode_checksummed("p", no_steps)),
                    Contains("lacks troupe.shard.0.steps"));
  const auto back = decode_checkpoint_part("p", mended("troupe.shard.0.steps", "34,34"));
  REQUIRE(back.part.shards.size() == 1);
  CHECK(back.part.shards[0].optimizer == optimizer_kind::adam);
  REQUIRE(back.part.shards[0].keys.size() == 2);
  CHECK(back.part.shards[0].keys[1].state.tensors.size() == 2);
  CHECK(back.part.shards[0].keys[1].state.steps == 34);
}

TEST_CASE("any flipped byte of a manifest is read as a manifest or refused as io_error",
          "[io][checkpoint]") {
  test::temp_dir dir;
  const auto prefix = dir.file("m");
  test::write_split(prefix, sample(), sliced, 2, 2);
  const auto manifest = checkpoint_manifest_path(prefix, 3);
  const auto good = text_of(manifest);
  std::size_t refused = 0;
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (char bit : {'\x01', '\x40'}) {
      auto text = good;
      text[at] = static_cast<char>(text[at] ^ bit);
      write_text(manifest, text);
      try {
        read_any_checkpoint(prefix, 3); // e.g. another network name: only messages use it
      } catch (const io_error& e) {
        ++refused;
        CHECK_THAT(e.what(), Contains(dir.path()));
      }
    }
  }
  CHECK(refused > good.size()); // most flips break the JSON, a record or a name
}

TEST_CASE("an inconsistent part or manifest is not written", "[io][checkpoint]") {
  test::temp_dir dir;
  const auto path = dir.file("p.safetensors");
  CHECK_THROWS_AS(write_checkpoint_part(path, 3, {}), std::invalid_argument);
  checkpoint_part twice;
  twice.replicas = {{0, replica_state{}}, {0, replica_state{}}};
  CHECK_THROWS_WITH(write_checkpoint_part(path, 3, twice), Contains("worker 0"));
  checkpoint_part bad_momentum;
  shard_part shard;
  shard.keys.push_back({0, 0, tensor({4}), optimizer_state{{tensor({3})}, 0}});
  bad_momentum.shards.push_back(shard);
  CHECK_THROWS_WITH(write_checkpoint_part(path, 3, bad_momentum),
                    Contains("momentum of shape [3] for weights [4]"));
  checkpoint_part short_adam;
  shard.optimizer = optimizer_kind::adam;
  shard.keys[0].state.tensors[0] = tensor({4});
  short_adam.shards.push_back(shard);
  CHECK_THROWS_WITH(write_checkpoint_part(path, 3, short_adam),
                    Contains("holds 1 state tensors, adam keeps 2"));
  CHECK_FALSE(std::filesystem::exists(path));
  const auto header = test::header_of(sample(), 2);
  CHECK_THROWS_AS(write_checkpoint_manifest(dir.file("m"), header, {}), std::invalid_argument);
  const part_record r{"a.safetensors", 10, "sha256:" + std::string(64, '0')};
  CHECK_THROWS_WITH(write_checkpoint_manifest(dir.file("m"), header, {r, r}), Contains("twice"));
}

TEST_CASE("resumed_counters: by index, or equal counters across another shard count",
          "[io][checkpoint]") {
  auto c = sample();
  CHECK(resumed_counters(c, 0, 2, "f").updates == 34);
  CHECK(resumed_counters(c, 1, 2, "f").updates == 0);
  CHECK_THROWS_WITH(
    resumed_counters(c, 0, 3, "f"),
    Contains("f: was written by a run of 2 shard(s) and its shards' counters differ "
             "(async/ssp): resume with 2 shards"));
  c.shards[1] = c.shards[0];
  for (std::size_t shards : {1, 3}) {
    for (std::size_t i = 0; i < shards; ++i) {
      const auto r = resumed_counters(c, i, shards, "f");
      CHECK(r.updates == 34);
      CHECK(r.last_learning_rate == 0.1f);
      CHECK(r.last_steps == c.shards[0].last_steps);
    }
  }
  c.shards[1].last_learning_rate = 0.2f;
  CHECK_THROWS_AS(resumed_counters(c, 0, 1, "f"), io_error);
}

TEST_CASE("a shard's counters keep what shard changes set, and a bad entry is refused",
          "[io][checkpoint]") {
  shard_counters s;
  s.updates = 12;
  s.last_learning_rate = 0.03f;
  s.last_steps = {{0, 11}};
  // Without changes the text is as it always was: older checkpoints read the same.
  CHECK(shard_text(s).find(" set=") == std::string::npos);
  s.base_lr = 0.03f;
  s.weight_decay = 0.0005f;
  const auto text = shard_text(s);
  CHECK(text.find(" set=lr:") != std::string::npos);
  safetensors_content content;
  content.metadata["troupe.shard.0"] = text;
  layout_reader reader("m.safetensors", content);
  const auto back = read_shard(reader, "troupe.shard.0");
  REQUIRE(back.base_lr.has_value());
  CHECK(*back.base_lr == 0.03f);
  CHECK(!back.momentum.has_value());
  REQUIRE(back.weight_decay.has_value());
  CHECK(*back.weight_decay == 0.0005f);
  CHECK(shard_text(back) == text);
  const auto refused = [](const std::string& value) {
    safetensors_content c;
    c.metadata["troupe.shard.0"] = value;
    layout_reader r("m.safetensors", c);
    CHECK_THROWS_WITH(read_shard(r, "troupe.shard.0"),
                      Catch::Contains("m.safetensors: metadata troupe.shard.0 has the bad value"));
  };
  const auto head = std::string("step=12 lr=3cf5c28f last=0:11");
  refused(head + " set=beta:3cf5c28f");
  refused(head + " set=lr:3cf5c2");
  refused(head + " set=lr:3cf5c28f,lr:3cf5c28f");
  refused(head + " set=lr3cf5c28f");
  refused(head + " more=1");
  refused(head + " set=lr:3cf5c28f x");
}
