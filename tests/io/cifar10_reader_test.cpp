// Tests for io/cifar10_reader.cpp: CIFAR-10 batch files written here record by record and read
// back exactly, the directory search, and each way a batch file can be wrong.
#include <troupe/io/cifar10_reader.hpp>

#include <filesystem>

#include <catch2/catch.hpp>

#include "tests/io/test_files.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

// A batch file of `labels.size()` records; record r's pixels come from seed first_seed + r.
void write_batch(const std::string& path, const test::bytes& labels, std::uint32_t first_seed) {
  test::bytes content;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    const auto record = test::cifar_record(labels[r], first_seed + std::uint32_t(r));
    content.insert(content.end(), record.begin(), record.end());
  }
  test::write_file(path, content);
}

void check_record(const dataset& data, std::int64_t index, std::uint8_t label, std::uint32_t seed) {
  const auto record = test::cifar_record(label, seed);
  CHECK(data.label(index) == label);
  // Record bytes 1..3072 are the R, G, B planes, which is exactly the CHW sample layout.
  for (std::size_t i = 0; i < 3072; ++i)
    REQUIRE(data.pixels(index)[i] == record[i + 1]);
}

void write_train_batches(const std::string& dir) {
  for (int b = 1; b <= 5; ++b)
    write_batch(dir + "/data_batch_" + std::to_string(b) + ".bin",
                {std::uint8_t(b), std::uint8_t(9 - b)}, std::uint32_t(10 * b));
}

} // namespace

TEST_CASE("load_cifar10_files reads records in file order", "[io][cifar10]") {
  test::temp_dir dir;
  write_batch(dir.file("a.bin"), {3, 9, 0}, 100);
  write_batch(dir.file("b.bin"), {5}, 200);
  const auto data = load_cifar10_files({dir.file("a.bin"), dir.file("b.bin")}, "two files");
  REQUIRE(data->size() == 4);
  CHECK(data->sample_shape() == shape_t{3, 32, 32});
  CHECK(data->classes() == 10);
  CHECK(data->description() == "two files");
  check_record(*data, 0, 3, 100);
  check_record(*data, 1, 9, 101);
  check_record(*data, 2, 0, 102);
  check_record(*data, 3, 5, 200);
}

TEST_CASE("load_cifar10_dir reads the train batches 1..5 in order", "[io][cifar10]") {
  test::temp_dir dir;
  write_train_batches(dir.path());
  write_batch(dir.file("test_batch.bin"), {4}, 999);
  const auto train = load_cifar10_dir(dir.path(), split::train);
  REQUIRE(train->size() == 10);
  for (int b = 1; b <= 5; ++b) {
    check_record(*train, 2 * (b - 1), std::uint8_t(b), std::uint32_t(10 * b));
    check_record(*train, 2 * (b - 1) + 1, std::uint8_t(9 - b), std::uint32_t(10 * b + 1));
  }
  CHECK(train->description() == "cifar10 train (" + dir.path() + ")");
  const auto test_split = load_cifar10_dir(dir.path(), split::test);
  REQUIRE(test_split->size() == 1);
  check_record(*test_split, 0, 4, 999);
}

TEST_CASE("load_cifar10_dir also looks in cifar-10-batches-bin", "[io][cifar10]") {
  test::temp_dir dir;
  const auto inner = dir.file("cifar-10-batches-bin");
  std::filesystem::create_directory(inner);
  write_batch(inner + "/test_batch.bin", {2, 8}, 7);
  const auto data = load_cifar10_dir(dir.path(), split::test);
  REQUIRE(data->size() == 2);
  check_record(*data, 1, 8, 8);
  CHECK(data->description() == "cifar10 test (" + inner + ")");
}

TEST_CASE("load_cifar10_dir names the missing batch files", "[io][cifar10]") {
  test::temp_dir dir;
  REQUIRE_THROWS_AS(load_cifar10_dir(dir.path(), split::test), io_error);
  REQUIRE_THROWS_WITH(load_cifar10_dir(dir.path(), split::test),
                      Contains(dir.file("test_batch.bin")) && Contains("cifar-10-batches-bin"));
  write_train_batches(dir.path());
  std::filesystem::remove(dir.file("data_batch_4.bin"));
  REQUIRE_THROWS_WITH(load_cifar10_dir(dir.path(), split::train),
                      Contains("files not found: " + dir.file("data_batch_4.bin") + " (")
                        && !Contains("data_batch_3"));
}

TEST_CASE("load_cifar10_files names a missing file", "[io][cifar10]") {
  test::temp_dir dir;
  REQUIRE_THROWS_WITH(load_cifar10_files({dir.file("gone.bin")}, "x"),
                      dir.file("gone.bin") + ": cannot open: No such file or directory");
}

TEST_CASE("load_cifar10_files rejects a size that is not whole records", "[io][cifar10]") {
  test::temp_dir dir;
  auto content = test::cifar_record(1, 1);
  const auto second = test::cifar_record(2, 2);
  content.insert(content.end(), second.begin(), second.begin() + 100);
  test::write_file(dir.file("cut.bin"), content);
  REQUIRE_THROWS_WITH(load_cifar10_files({dir.file("cut.bin")}, "x"),
                      dir.file("cut.bin")
                        + ": size 3173 bytes is not a multiple of the 3073-byte CIFAR-10 record "
                          "(1 records and 100 bytes over)");
  test::write_file(dir.file("empty.bin"), {});
  REQUIRE_THROWS_WITH(load_cifar10_files({dir.file("empty.bin")}, "x"),
                      Contains(dir.file("empty.bin") + ": empty file"));
}

TEST_CASE("load_cifar10_files rejects a label above 9", "[io][cifar10]") {
  test::temp_dir dir;
  write_batch(dir.file("ok.bin"), {1, 2}, 0);
  write_batch(dir.file("bad.bin"), {0, 1, 2, 10, 4}, 0);
  REQUIRE_THROWS_WITH(load_cifar10_files({dir.file("ok.bin"), dir.file("bad.bin")}, "x"),
                      dir.file("bad.bin") + ": label 10 in record 3 is out of range [0, 10)");
}

TEST_CASE("load_cifar10_files needs at least one file", "[io][cifar10]") {
  REQUIRE_THROWS_WITH(load_cifar10_files({}, "cifar10 train"),
                      "cifar10 train: no CIFAR-10 batch files given");
}
